"""One module per command. Each holds the command's declaration (its parameters, read by typer
from the signature; its help, the docstring), its work, and its EXAMPLES: (what it does, the
command line) or (what it does, the command line, what it prints), numbered at the end of its help,
and with what they print on its page (scripts/cli_docs.py); cli/app.py registers them in the order
`s3bulk --help` lists them."""
