complete -c mcpeval-generate -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-generate -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-generate -l finding -d 'The finding to probe' -r
complete -c mcpeval-generate -l expect -d 'An expect object (at most 64 KiB) for an instruction-fidelity case, or - for standard input' -r -F
complete -c mcpeval-generate -l output -d 'The manifest file to write, or - for standard output' -r -F
complete -c mcpeval-generate -l confirm-read-only -d 'Confirm that calling the finding\'s tool with the filled-in arguments is safe to repeat'
complete -c mcpeval-generate -l force -d 'Replace the output file if it exists'
complete -c mcpeval-generate -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-generate -s V -l version -d 'Print version'
