complete -c mcpeval-serve -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-serve -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-serve -l workspace -d 'The directory generate_manifest writes in, and the directory of the commands serve runs [default: the current directory]' -r -F
complete -c mcpeval-serve -l allow-command -d 'Let verify_finding run a server command starting with these words (repeatable; split as a shell would, nothing expanded)' -r
complete -c mcpeval-serve -l allow-any-command -d 'Let verify_finding run any command a client names, with your rights (warns on stderr)'
complete -c mcpeval-serve -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-serve -s V -l version -d 'Print version'
