package main

// saltTempPrefix starts the names of the temporary files storeSalt
// writes a salt to before it puts the file in place: os.CreateTemp adds
// decimal digits.
const saltTempPrefix = saltFile + ".tmp"

// removeSaltTemps removes from dir the temporary files of storeSalt that
// a crash before their rename left, and nothing else: regular files of
// its naming (saltTempPrefix and digits, removeTempFiles). Left there,
// they would outlive every start, and make a directory that holds
// nothing else look like one that holds a node's files (keepSaltFirst).
// A directory that does not exist holds none, nor does a path that is no
// directory: the node's open refuses it later, after serve built its
// exporters, which it then shuts down.
func removeSaltTemps(dir string) error {
	return removeTempFiles(dir, saltTempPrefix, "the cluster salt's write")
}
