complete -c mcpeval-export-issues -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-export-issues -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-export-issues -l dir -d 'Directory the issue files go to (created if missing)' -r -F
complete -c mcpeval-export-issues -l server -d 'Only findings of this server (repeatable)' -r
complete -c mcpeval-export-issues -l format -d 'What stdout lists: the written files, one path a line (text), or one JSON object with dir, written, unchanged, stale, pruned (json)' -r -f -a "text\t'For people'
json\t'One JSON object, for scripts'"
complete -c mcpeval-export-issues -l prune -d 'Delete stale issue files instead of only listing them'
complete -c mcpeval-export-issues -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-export-issues -s V -l version -d 'Print version'
