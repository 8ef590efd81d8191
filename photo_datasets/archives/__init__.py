"""What files are made of, with no dataset in it: the zip format, files made of pieces, a tar
read in place."""
