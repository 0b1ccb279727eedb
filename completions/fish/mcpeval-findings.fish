complete -c mcpeval-findings -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-findings -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-findings -l from -d 'Read the findings of this share envelope instead of the store (- for standard input)' -r -F
complete -c mcpeval-findings -l format -d 'Output format' -r -f -a "agent\t'Instructions for an LLM agent fixing the server'
md\t'Markdown for people'
json\t'One JSON object {"schema": "mcpeval.findings/1", "promoted_at", "findings": [...]}'"
complete -c mcpeval-findings -l state -d 'Only findings in this lifecycle state (repeatable)' -r -f -a "open\t''
fix-claimed\t''
verifying\t''
closed\t''"
complete -c mcpeval-findings -l server -d 'Only findings of this server (repeatable)' -r
complete -c mcpeval-findings -l finding -d 'Only this finding (repeatable); with a team database, only its rows are read' -r
complete -c mcpeval-findings -l history -d 'Print each listed finding\'s lifecycle history instead (with --format json)'
complete -c mcpeval-findings -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-findings -s V -l version -d 'Print version'
