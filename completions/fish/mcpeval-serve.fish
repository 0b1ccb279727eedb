complete -c mcpeval-serve -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-serve -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-serve -s V -l version -d 'Print version'
