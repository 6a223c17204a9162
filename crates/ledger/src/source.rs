//! Block sources: files, directories, tar and tar.bz2 archives (being written).
