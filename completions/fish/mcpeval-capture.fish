complete -c mcpeval-capture -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-capture -l server -d 'Server name for the records [default: serverInfo.name from the server, else the command\'s file name]' -r
complete -c mcpeval-capture -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-capture -s V -l version -d 'Print version'
