package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errRecordShort is returned for a record body that ends inside a field.
var errRecordShort = errors.New("record ends inside a field")

// readRecord reads the body of one record (what follows its length) into
// r, as strictly as Kafka's DefaultRecord.readFrom: the fields must use
// the body exactly, the header count and each header key's length may not
// be negative. A negative key, value or header value length is null. The
// key, value and header values alias body.
func readRecord(body []byte, r *kmsg.Record) error {
	f := fieldReader{b: body}
	r.Attributes = int8(f.byte())
	r.TimestampDelta64 = f.varint()
	r.TimestampDelta = int32(r.TimestampDelta64)
	r.OffsetDelta = int32(f.varint())
	r.Key = f.bytes()
	r.Value = f.bytes()
	nh := f.varint()
	switch {
	case f.short:
		return errRecordShort
	case nh < 0:
		return fmt.Errorf("header count %d", nh)
	case nh > int64(len(f.b)/2): // a header takes two bytes at least
		return fmt.Errorf("%d headers in %d bytes", nh, len(f.b))
	}
	if nh > 0 {
		r.Headers = make([]kmsg.Header, nh)
	}
	for i := range r.Headers {
		kl := f.varint()
		if kl < 0 {
			return fmt.Errorf("header %d: key length %d", i, kl)
		}
		r.Headers[i].Key = string(f.take(kl))
		r.Headers[i].Value = f.bytes()
	}
	if f.short {
		return errRecordShort
	}
	if len(f.b) > 0 {
		return fmt.Errorf("%d bytes after the fields of a %d-byte record", len(f.b), len(body))
	}
	return nil
}

// fieldReader reads a record's fields in order; once a field runs past
// the end, short is set and every later field reads as zero.
type fieldReader struct {
	b     []byte
	short bool
}

func (f *fieldReader) byte() byte {
	if len(f.b) == 0 {
		f.short = true
		return 0
	}
	v := f.b[0]
	f.b = f.b[1:]
	return v
}

func (f *fieldReader) varint() int64 {
	v, n := binary.Varint(f.b)
	if n <= 0 {
		f.short, f.b = true, nil
		return 0
	}
	f.b = f.b[n:]
	return v
}

// take reads n bytes (n >= 0).
func (f *fieldReader) take(n int64) []byte {
	if n > int64(len(f.b)) {
		f.short, f.b = true, nil
		return nil
	}
	v := f.b[:n:n]
	f.b = f.b[n:]
	return v
}

// bytes reads a length and that many bytes; a negative length is null.
func (f *fieldReader) bytes() []byte {
	n := f.varint()
	if n < 0 {
		return nil
	}
	return f.take(n)
}
