package console

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/equeue-go/equeue"
)

// The overview's tables and a topic's table of groups list every topic or
// group the broker has, which can be thousands, and a group page's tables
// every queue and member of the group: each shows at most shownRows of
// them, in name order, with the count and links to the rows before and
// after. The overview and the group page also take a name prefix filter.
// Both come in the query string, so that the page's refresh (which
// fetches the page's own address) keeps them.

// shownRows is how many rows such a table shows at once.
const shownRows = 100

// The query parameters of those pages: the name prefix filter and where
// each table's rows start (tfrom: user topics, gfrom: groups, ifrom:
// engine topics, pfrom: a group's progress per queue, mfrom: a group's
// members).
const (
	filterParam  = "q"
	topicsFrom   = "tfrom"
	groupsFrom   = "gfrom"
	internalFrom = "ifrom"
	progressFrom = "pfrom"
	membersFrom  = "mfrom"
)

// maxFilterLen is the length of the longest name: an engine topic's
// prefix ("%RETRY%", "%REPLY%") and "namespace:name" of 127 characters
// each.
const maxFilterLen = len(equeue.RetryTopicPrefix) + 127 + len(equeue.NamespaceSeparator) + 127

// rowPage is what a table shows of its rows.
type rowPage struct {
	// From is the index of its first row; To is past its last.
	From, To int
	// Matching counts the rows that match Filter, Total all the rows.
	Matching, Total int
	// Filter is the name prefix the rows match; empty matches all.
	Filter string
	// Size is shownRows, for the links' text.
	Size int
	// Prev and Next link to the rows before and after these, First to
	// the first rows when Prev does not; each is empty when there are
	// none.
	First, Prev, Next string
}

// Shown reports whether the table shows any row.
func (p rowPage) Shown() bool { return p.To > p.From }

// FromOne is the 1-based number of the first row shown: unsigned, so
// that a From as large as an int holds (a row number typed in) does not
// wrap around to a negative number.
func (p rowPage) FromOne() uint { return uint(p.From) + 1 }

// Partial reports whether the table leaves out any of the rows there are:
// those before or after its page, or that do not match Filter.
func (p rowPage) Partial() bool { return p.Total > 0 && p.To-p.From < p.Total }

// pageRows sorts rows by name and returns the page of them that starts at
// from, and what it shows. link returns the address of the page whose
// rows start at another index.
func pageRows[T any](rows []T, name func(T) string, from, total int, filter string, link func(int) string) ([]T, rowPage) {
	return pageRowsFunc(rows, func(a, b T) int { return cmp.Compare(name(a), name(b)) }, from, total, filter, link)
}

// pageRowsFunc is pageRows with rows sorted by compare.
func pageRowsFunc[T any](rows []T, compare func(a, b T) int, from, total int, filter string, link func(int) string) ([]T, rowPage) {
	slices.SortFunc(rows, compare)
	// A from past the rows (they were deleted since the link was made)
	// shows none: start and end stay within them.
	start := min(from, len(rows))
	end := min(len(rows), start+shownRows)
	p := rowPage{From: from, To: end, Matching: len(rows), Total: total, Filter: filter, Size: shownRows}
	if from > 0 {
		prev := max(0, start-shownRows)
		p.Prev = link(prev)
		if prev > 0 {
			p.First = link(0)
		}
	}
	if end < len(rows) {
		p.Next = link(end)
	}
	return rows[start:end], p
}

// matches reports whether a topic or group name starts with filter; an
// engine topic's name ("%RETRY%group") also matches by the name after its
// prefix.
func matches(name, filter string) bool {
	if filter == "" || strings.HasPrefix(name, filter) {
		return true
	}
	if rest, ok := strings.CutPrefix(name, "%"); ok {
		if i := strings.IndexByte(rest, '%'); i >= 0 {
			return strings.HasPrefix(rest[i+1:], filter)
		}
	}
	return false
}

// listQuery is the query of a page of tables of rows.
type listQuery struct {
	// filter is the name prefix filter; empty matches all.
	filter string
	// from is where each table's rows start, by its parameter.
	from map[string]int
	// values are the parameters read, which links keep.
	values url.Values
}

// parseListQuery reads params, each the filter or where a table's rows
// start, and no other: links keep only those. Its error explains what is
// wrong to the visitor.
func parseListQuery(values url.Values, params ...string) (listQuery, error) {
	q := listQuery{from: map[string]int{}, values: url.Values{}}
	for _, k := range params {
		s := values.Get(k)
		if s == "" {
			continue
		}
		if k == filterParam {
			if err := validFilter(s); err != nil {
				return listQuery{}, err
			}
			q.filter = s
		} else {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return listQuery{}, fmt.Errorf("%q is not a row to start from (%s is a number of rows, 0 or more)", s, k)
			}
			q.from[k] = n
		}
		q.values.Set(k, s)
	}
	return q, nil
}

// validFilter accepts what can begin a topic or group name, with its
// namespace or engine prefix.
func validFilter(f string) error {
	bad := len(f) > maxFilterLen
	for i := 0; i < len(f) && !bad; i++ {
		c := f[i]
		bad = !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-:%", c) >= 0)
	}
	if bad {
		return fmt.Errorf("%q is not a name filter: it is the start of a topic or group name, up to %d characters of letters, digits and . _ - : %%", f, maxFilterLen)
	}
	return nil
}

// link returns the address under the prefix of path with this query,
// the rows of table k starting at from, and the fragment.
func (q listQuery) link(prefix, path, k string, from int, fragment string) string {
	v := url.Values{}
	for key, vals := range q.values {
		v[key] = vals
	}
	if from > 0 {
		v.Set(k, strconv.Itoa(from))
	} else {
		v.Del(k)
	}
	u := prefix + path
	if enc := v.Encode(); enc != "" {
		u += "?" + enc
	}
	if fragment != "" {
		u += "#" + fragment
	}
	return u
}
