"""One module per command. Each holds the command's declaration (its parameters, read by typer
from the signature; its help, the docstring), its work, and its numbered EXAMPLES, shown at the
end of its help; cli/app.py registers them in the order `s3bulk --help` lists them."""
