complete -c mcpeval-annotate -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-annotate -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-annotate -l event-id -d 'The call\'s identity.event_id (a UUID) from the journal' -r
complete -c mcpeval-annotate -l session -d 'Legacy target: the call\'s session token (s- and 16 hex digits); needs --seq' -r
complete -c mcpeval-annotate -l seq -d 'Legacy target: the call\'s turn within --session (1 or more)' -r
complete -c mcpeval-annotate -l kind -d 'What the observation is' -r -f -a "false-success\t'The call reported success but did not do what was asked'
workaround\t'The agent had to work around the tool'
misleading-error\t'The error text pointed the agent the wrong way'
slow\t'The call took too long'
other\t'Anything else worth a note'"
complete -c mcpeval-annotate -l note -d 'The observation: at most 240 characters, no control characters; not redacted' -r
complete -c mcpeval-annotate -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-annotate -s V -l version -d 'Print version'
