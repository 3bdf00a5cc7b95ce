"""Generated modules of the command line (:mod:`..helpgen`); do not edit them by hand."""
