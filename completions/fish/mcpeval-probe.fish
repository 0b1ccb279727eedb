complete -c mcpeval-probe -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-probe -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-probe -l manifest -d 'The manifest file (mcp-eval.manifest.json), or - for standard input' -r -F
complete -c mcpeval-probe -l case -d 'The id of the case to run' -r
complete -c mcpeval-probe -l finding -d 'Refuse unless the case names this finding' -r
complete -c mcpeval-probe -l format -d 'Output: one JSON object, or one line for people' -r -f -a "json\t'One JSON object (mcpeval.probe/1)'
text\t'One line: finding, case, probe, result, attempts, binding, run, reason, detail'
junit\t'JUnit XML for CI test reporters (with --all only)'"
complete -c mcpeval-probe -l handshake-timeout -d 'How long each handshake request (server/discover, initialize) waits, start-up included' -r
complete -c mcpeval-probe -l url -d 'Reach the server at this Streamable HTTP endpoint instead of starting a command' -r
complete -c mcpeval-probe -l header -d 'An extra request header for --url, as "Name: value" (repeatable); its value is never shown or stored' -r
complete -c mcpeval-probe -l header-file -d 'Extra request headers for --url from FILE, one "Name: value" a line (# comments and blank lines ignored; repeatable); refused unless only its owner may read it. Keeps secrets off the command line' -r -F
complete -c mcpeval-probe -l all -d 'Run every case of the manifest, one after another, each against a fresh server'
complete -c mcpeval-probe -l require-oracle -d 'Require the false-success oracle even when the index does not class the finding so'
complete -c mcpeval-probe -l server-stderr -d 'Pass the server\'s stderr through (it may contain raw values)'
complete -c mcpeval-probe -l no-hint -d 'Leave the hint of a red or transport-error result off stderr: for a caller (mcpeval-verify) that prints it itself, from the result\'s reason'
complete -c mcpeval-probe -l endpoint-from-env -d 'Reach the endpoint that MCPEVAL_PROBE_ENDPOINT holds (URL and headers): how mcpeval-verify passes one without putting its secrets on a command line'
complete -c mcpeval-probe -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-probe -s V -l version -d 'Print version'
