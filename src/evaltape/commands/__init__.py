"""One module per ``evaltape`` subcommand."""
