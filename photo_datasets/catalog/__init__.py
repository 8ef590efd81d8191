"""What a build writes for people and catalogs: the report page, statistics, Croissant."""
