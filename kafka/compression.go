package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Record batch compression codecs (the low three bits of the attributes).
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

var (
	// errCodec is returned for a batch whose compressed records do not
	// decode (or inflate beyond maxDecompressed). The producer compressed
	// them so: sent again, they fail again.
	errCodec = errors.New("kafka: bad compressed records")
	// errUnknownCodec is returned for a batch compressed with a codec the
	// listener does not know.
	errUnknownCodec = errors.New("kafka: unknown compression codec")
)

// maxDecompressed bounds what one batch may inflate to, so a small
// compressed request cannot make the listener allocate without bound.
const maxDecompressed = maxRequestSize

// xerialMagic starts snappy data framed the way the Java client frames it.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

var zstdDec = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDecompressed))
})

// decompress returns the records of a batch compressed with codec.
func decompress(codec int, src []byte) ([]byte, error) {
	switch codec {
	case codecNone:
		return src, nil
	case codecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", errCodec, err)
		}
		defer func() { _ = zr.Close() }()
		return readLimited(zr, "gzip")
	case codecSnappy:
		return unsnappy(src)
	case codecLZ4:
		return readLimited(lz4.NewReader(bytes.NewReader(src)), "lz4")
	case codecZstd:
		d, err := zstdDec()
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", errCodec, err)
		}
		out, err := d.DecodeAll(src, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", errCodec, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: codec %d", errUnknownCodec, codec)
}

func readLimited(r io.Reader, name string) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errCodec, name, err)
	}
	if len(out) > maxDecompressed {
		return nil, fmt.Errorf("%w: %s: inflates beyond %d bytes", errCodec, name, maxDecompressed)
	}
	return out, nil
}

// unsnappy decodes raw snappy blocks and the Java client's xerial framing
// (magic, version, compatible version, then length-prefixed blocks).
func unsnappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) || len(src) < 16 {
		return snappyBlock(nil, src)
	}
	var out []byte
	for rest := src[16:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: snappy: truncated xerial chunk", errCodec)
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, fmt.Errorf("%w: snappy: xerial chunk beyond the data", errCodec)
		}
		var err error
		if out, err = snappyBlock(out, rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

func snappyBlock(dst, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil || n < 0 || len(dst)+n > maxDecompressed {
		return nil, fmt.Errorf("%w: snappy: bad block length", errCodec)
	}
	buf, err := snappy.Decode(nil, block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", errCodec, err)
	}
	return append(dst, buf...), nil
}
