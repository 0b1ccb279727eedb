complete -c mcpeval-readiness -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-readiness -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-readiness -l days -d 'How many UTC days to report, today included' -r
complete -c mcpeval-readiness -l format -d 'Output format' -r -f -a "md\t'Markdown for people'
json\t'One JSON object'"
complete -c mcpeval-readiness -l server -d 'Only this server (repeatable)' -r
complete -c mcpeval-readiness -l now -d 'Report as if now were this RFC 3339 time (reproducible reports)' -r
complete -c mcpeval-readiness -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-readiness -s V -l version -d 'Print version'
