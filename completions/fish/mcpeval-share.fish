complete -c mcpeval-share -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-share -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-share -l output -d 'The envelope file to write, or - for standard output' -r -F
complete -c mcpeval-share -l server -d 'Only this server (repeatable)' -r
complete -c mcpeval-share -l include-notes -d 'Include the annotation notes on shared calls (printed on stderr first)'
complete -c mcpeval-share -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-share -s V -l version -d 'Print version'
