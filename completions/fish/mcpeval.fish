complete -c mcpeval -l home -d 'The store for the command (sets MCPEVAL_HOME)' -r -f -a "(__fish_complete_directories)"
complete -c mcpeval -l format -d 'How --list prints: aligned text, or one JSON object' -r -f -a "text\t''
json\t''"
complete -c mcpeval -l list -d 'List every mcpeval-NAME found, without running any (same as \'mcpeval help\')'
complete -c mcpeval -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval -s V -l version -d 'Print version'
