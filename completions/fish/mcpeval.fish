# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_mcpeval_global_optspecs
    string join \n home= list format= h/help V/version
end

function __fish_mcpeval_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_mcpeval_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_mcpeval_using_subcommand
    set -l cmd (__fish_mcpeval_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c mcpeval -n "__fish_mcpeval_needs_command" -l home -d 'The store for the command (sets MCPEVAL_HOME)' -r -f -a "(__fish_complete_directories)"
complete -c mcpeval -n "__fish_mcpeval_needs_command" -l format -d 'How --list prints: aligned text, or one JSON object' -r -f -a "text\t''
json\t''"
complete -c mcpeval -n "__fish_mcpeval_needs_command" -l list -d 'List every mcpeval-NAME found, without running any (same as \'mcpeval help\')'
complete -c mcpeval -n "__fish_mcpeval_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval -n "__fish_mcpeval_needs_command" -s V -l version -d 'Print version'
complete -c mcpeval -n "__fish_mcpeval_needs_command" -f -a "help" -d 'List the commands, or show a command\'s own help (mcpeval-NAME --help)'
