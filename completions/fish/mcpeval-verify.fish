complete -c mcpeval-verify -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-verify -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-verify -l finding -d 'The finding the case proves' -r
complete -c mcpeval-verify -l case -d 'The id of the case to run (its finding must be --finding)' -r
complete -c mcpeval-verify -l manifest -d 'The manifest file (mcp-eval.manifest.json), or - for standard input' -r -F
complete -c mcpeval-verify -l record -d 'Record the results printed by mcpeval-probe (JSON Lines), from FILE or - for standard input' -r -F
complete -c mcpeval-verify -l format -d 'Output: one line (two when red) for people, or one JSON object' -r -f -a "text\t'For people'
json\t'One JSON object, for scripts'"
complete -c mcpeval-verify -l handshake-timeout -d 'Passed to mcpeval-probe: how long each handshake request waits, start-up included' -r
complete -c mcpeval-verify -l url -d 'Passed to mcpeval-probe: reach the server at this Streamable HTTP endpoint instead of starting a command' -r
complete -c mcpeval-verify -l header -d 'Passed to mcpeval-probe: an extra request header for --url, as "Name: value" (repeatable); its value is never shown or stored' -r
complete -c mcpeval-verify -l header-file -d 'Passed to mcpeval-probe: extra request headers for --url from FILE, one "Name: value" a line (# comments and blank lines ignored; repeatable); refused unless only its owner may read it. Keeps secrets off the command line' -r -F
complete -c mcpeval-verify -l server-stderr -d 'Passed to mcpeval-probe: let the server\'s stderr through (it may contain raw values)'
complete -c mcpeval-verify -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-verify -s V -l version -d 'Print version'
