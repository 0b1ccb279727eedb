complete -c mcpeval-salt -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-salt -l export -d 'Write the store\'s salt to FILE (mode 0600; - for standard output), making it if missing' -r -F
complete -c mcpeval-salt -l import -d 'Install the salt in FILE (- for standard input) into a store that has none' -r -F
complete -c mcpeval-salt -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-salt -s V -l version -d 'Print version'
