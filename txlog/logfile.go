package txlog

// LogFile describes a commit or checkpoint file of "_delta_log/" as its
// name says (spec "Delta Log Entries", "Checkpoints").
type LogFile struct {
	// Key is the store key, "_delta_log/...".
	Key string
	// Version is the table version the file belongs to.
	Version int64
	// Commit is true for a commit file ("%020d.json"), false for a
	// checkpoint file (classic, multi-part or UUID-named v2).
	Commit bool
	// Part and Parts are the 1-based part number and the number of parts
	// of a multi-part checkpoint file; 0 for every other file.
	Part, Parts int
}

// ParseLogKey recognises a commit or checkpoint file directly under
// "_delta_log/" by its key, as Load does; ok is false for every other key
// (.crc files, _last_checkpoint, _sidecars/, compacted files, ...).
func ParseLogKey(key string) (f LogFile, ok bool) {
	lf, ok := parseLogKey(key)
	if !ok {
		return LogFile{}, false
	}
	return LogFile{Key: lf.key, Version: lf.version, Commit: lf.kind == kindCommit, Part: lf.part, Parts: lf.parts}, true
}
