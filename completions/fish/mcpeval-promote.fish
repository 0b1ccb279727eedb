complete -c mcpeval-promote -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-promote -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-promote -l threshold -d 'Minimum score for a finding, finite and ≥ 0 [default: config.json, else the calibrated default]' -r
complete -c mcpeval-promote -l now -d 'Score as of this RFC 3339 time instead of now, for reproducible reports' -r
complete -c mcpeval-promote -l format -d 'Output: one line for people (text), or one JSON object (json)' -r -f -a "text\t'For people'
json\t'One JSON object, for scripts'"
complete -c mcpeval-promote -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-promote -s V -l version -d 'Print version'
