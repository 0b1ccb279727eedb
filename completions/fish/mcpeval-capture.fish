complete -c mcpeval-capture -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-capture -l server -d 'Server name for the records [default: serverInfo.name from the server, else the command\'s file name or the upstream\'s host:port]' -r
complete -c mcpeval-capture -l listen -d 'Serve Streamable HTTP on ADDR (HOST:PORT, or a bare PORT on 127.0.0.1; port 0 picks a free one)' -r
complete -c mcpeval-capture -l upstream -d 'The MCP server\'s Streamable HTTP endpoint (http or https), e.g. http://127.0.0.1:3001/mcp' -r
complete -c mcpeval-capture -l session-header -d 'Key sessions by this request header when the server issues no Mcp-Session-Id' -r
complete -c mcpeval-capture -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-capture -s V -l version -d 'Print version'
