package txlog

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// ErrPathOutsideTable is matched (errors.Is) by a *PathError: a path in the
// log (add.path, remove.path, a deletion vector's path) names no file under
// the table root, nor under a root the reader allowed explicitly (shallow
// clones). Readers refuse such a path before opening any store for it.
var ErrPathOutsideTable = errors.New("txlog: path lies outside the table root")

// PathError reports a path of the log that cannot be mapped to a file under
// the table root (or an allowed root). It matches ErrPathOutsideTable.
type PathError struct {
	// Path is the path as found in the log, URI-decoded once.
	Path string
	// Root is the URI of the table root.
	Root string
	// Reason says why the path is refused, e.g. "scheme s3 is not the
	// table's scheme file".
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("txlog: path %q lies outside the table root %s: %s", e.Path, e.Root, e.Reason)
}

// Is reports whether target is ErrPathOutsideTable.
func (e *PathError) Is(target error) bool { return target == ErrPathOutsideTable }

// schemeRE matches the start of an absolute URI ("s3://", "file:/").
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:/`)

// uriRoot is a root URI split into its normalised parts.
type uriRoot struct {
	uri       string // normalised: scheme://authority/path, no trailing slash
	scheme    string // lower case; s3a and s3n are s3
	authority string // "" for local files (file:/x, file:///x, file://localhost/x)
	dir       string // cleaned absolute path ending in "/"
}

// splitURI splits an absolute URI (schemeRE matches it) into scheme,
// authority and cleaned path, with the spellings Delta writers use for one
// location made equal: "file:/x", "file:///x" and "file://localhost/x" are
// the local file /x; "s3a://" and "s3n://" are "s3://".
func splitURI(u string) (scheme, authority, p string) {
	i := strings.IndexByte(u, ':')
	scheme, rest := strings.ToLower(u[:i]), u[i+1:]
	if scheme == "s3a" || scheme == "s3n" {
		scheme = "s3"
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		authority, p, _ = strings.Cut(after, "/")
		p = "/" + p
	} else {
		p = rest
	}
	if scheme == "file" && strings.EqualFold(authority, "localhost") {
		authority = ""
	}
	return scheme, authority, path.Clean(p)
}

func parseRoot(uri string) (uriRoot, error) {
	u := strings.TrimRight(uri, "/")
	if !schemeRE.MatchString(u + "/") {
		return uriRoot{}, fmt.Errorf("txlog: root %q is not an absolute URI (scheme://authority/path)", uri)
	}
	scheme, authority, dir := splitURI(u + "/")
	r := uriRoot{scheme: scheme, authority: authority, dir: strings.TrimSuffix(dir, "/") + "/"}
	r.uri = scheme + "://" + authority + strings.TrimSuffix(r.dir, "/")
	if r.dir == "/" && authority == "" {
		r.uri = scheme + ":///"
	}
	return r, nil
}

// under returns the key of the cleaned absolute path p below r.
func (r *uriRoot) under(scheme, authority, p string) (string, bool) {
	if scheme != r.scheme || authority != r.authority {
		return "", false
	}
	k, ok := strings.CutPrefix(p, r.dir)
	return k, ok && k != ""
}

// PathResolver maps the paths of a table's log (add and remove paths,
// deletion vector paths) to store keys, and is the one place that decides
// whether a path may be read: relative paths must stay under the table root
// after "." and ".." are cleaned; absolute URIs must have the table root's
// scheme and authority (file:/x, file:///x and file://localhost/x are one
// local file; s3, s3a and s3n one scheme) and lie under its path, or under
// one of the allowed roots given to NewPathResolver. Everything else is a
// *PathError (ErrPathOutsideTable). It never opens a store. A PathResolver
// is immutable and safe for concurrent use.
type PathResolver struct {
	table   uriRoot
	allowed []uriRoot
}

// NewPathResolver returns the resolver for the table rooted at tableRoot
// (a store URI, e.g. "file:///data/t", "s3://bucket/t", "mem://name").
// Absolute paths under the allowedRoots are accepted too (shallow clones
// that reference the source table's files). It returns an error for a root
// that is not an absolute URI.
func NewPathResolver(tableRoot string, allowedRoots ...string) (*PathResolver, error) {
	t, err := parseRoot(tableRoot)
	if err != nil {
		return nil, err
	}
	r := &PathResolver{table: t}
	for _, a := range allowedRoots {
		ar, err := parseRoot(a)
		if err != nil {
			return nil, err
		}
		r.allowed = append(r.allowed, ar)
	}
	return r, nil
}

// Location is where a path of the log points.
type Location struct {
	// Root is the normalised URI of the root the file lies under: the table
	// root, or one of the allowed roots.
	Root string
	// Key is the file's store key relative to Root (cleaned, no leading
	// slash).
	Key string
	// InTable is true when Root is the table root.
	InTable bool
}

// Resolve maps p, a path of the log already URI-decoded once (DecodePath,
// or DeletionVectorDescriptor.AbsolutePath), to its location. A path
// without scheme is relative to the table root, unless it starts with "/":
// then it is an absolute path in the table root's scheme and authority.
// Errors are *PathError (ErrPathOutsideTable), naming p and the reason.
func (r *PathResolver) Resolve(p string) (Location, error) {
	fail := func(format string, args ...any) (Location, error) {
		return Location{}, &PathError{Path: p, Root: r.table.uri, Reason: fmt.Sprintf(format, args...)}
	}
	if p == "" {
		return fail("the path is empty")
	}
	if !schemeRE.MatchString(p) && !strings.HasPrefix(p, "/") {
		k := path.Clean(p)
		switch {
		case k == "..", strings.HasPrefix(k, "../"):
			return fail("the relative path leaves the table root through \"..\"")
		case k == ".":
			return fail("the path names the table root itself, not a file")
		}
		return Location{Root: r.table.uri, Key: k, InTable: true}, nil
	}
	scheme, authority, clean := r.table.scheme, r.table.authority, path.Clean(p)
	if !strings.HasPrefix(p, "/") {
		scheme, authority, clean = splitURI(p)
	}
	if k, ok := r.table.under(scheme, authority, clean); ok {
		return Location{Root: r.table.uri, Key: k, InTable: true}, nil
	}
	for i := range r.allowed {
		if k, ok := r.allowed[i].under(scheme, authority, clean); ok {
			return Location{Root: r.allowed[i].uri, Key: k}, nil
		}
	}
	switch {
	case scheme != r.table.scheme:
		return fail("scheme %s is not the table's scheme %s", scheme, r.table.scheme)
	case authority != r.table.authority:
		return fail("authority %q is not the table's authority %q", authority, r.table.authority)
	case clean+"/" == r.table.dir:
		return fail("the path names the table root itself, not a file")
	}
	return fail("%s is not under the table's directory %s", clean, r.table.dir)
}

// InTable returns the store key of p under the table root, and false when
// p lies elsewhere (under an allowed root, or refused).
func (r *PathResolver) InTable(p string) (string, bool) {
	loc, err := r.Resolve(p)
	if err != nil || !loc.InTable {
		return "", false
	}
	return loc.Key, true
}

// Locate returns the location of dv's file (storage types 'u' and 'p'):
// the path of AbsolutePath, resolved by r. Inline DVs ('i') have no file:
// it returns an error, as for a malformed descriptor.
func (dv *DeletionVectorDescriptor) Locate(r *PathResolver) (Location, error) {
	p, err := dv.AbsolutePath()
	if err != nil {
		return Location{}, err
	}
	return r.Resolve(p)
}
