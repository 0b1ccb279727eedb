complete -c mcpeval-close -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-close -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-close -l finding -d 'The finding to close' -r
complete -c mcpeval-close -l reason -d 'Why it is closed (at most 240 characters, one line)' -r
complete -c mcpeval-close -l format -d 'Output: one line for people, or one JSON object' -r -f -a "text\t'For people'
json\t'One JSON object, for scripts'"
complete -c mcpeval-close -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-close -s V -l version -d 'Print version'
