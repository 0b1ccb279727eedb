complete -c mcpeval-otel -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-otel -l listen -d 'Serve OTLP/HTTP on ADDR [default: 127.0.0.1:4318] (HOST:PORT, or a bare PORT on 127.0.0.1; port 0 picks a free one)' -r
complete -c mcpeval-otel -l import -d 'Read OTLP JSON lines from FILE (- for standard input; gzip is recognized)' -r
complete -c mcpeval-otel -l server -d 'Server name for every record [default: from each span, see above]' -r
complete -c mcpeval-otel -l pair-wait -d 'Seconds a client span waits for its server span before it is journaled alone' -r
complete -c mcpeval-otel -l format -d 'Print the summary for people (stderr) or as one JSON object (stdout)' -r -f -a "text\t'For people'
json\t'One JSON object, for scripts'"
complete -c mcpeval-otel -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-otel -s V -l version -d 'Print version'
