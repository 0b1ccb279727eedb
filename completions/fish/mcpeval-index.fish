complete -c mcpeval-index -l home -d 'Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]' -r -F
complete -c mcpeval-index -l database -d 'Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]' -r
complete -c mcpeval-index -l format -d 'Summary format: `indexed N calls (M new) from K journals in S s` on stderr (text), or on stdout `{"calls":N,"new":M,"journals":K,"seconds":S,"rebuild":REASON|null}`, with a team database also `"team":{"database","uploaded","stores","calls","new","journals","seconds"}` (json)' -r -f -a "text\t'For people'
json\t'One JSON object, for scripts'"
complete -c mcpeval-index -l rebuild -d 'Rebuild the index from every journal; recreates a damaged or foreign index.db'
complete -c mcpeval-index -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcpeval-index -s V -l version -d 'Print version'
