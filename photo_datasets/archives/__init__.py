"""What files are made of, with no dataset in it: the zip format, and files made of pieces."""
