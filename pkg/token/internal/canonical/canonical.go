// Package canonical reads JSON strictly and writes it the way Snodo (Elixir) binds and signs it.
//
// Reading follows Elixir's JSON decoder (a copy of OTP's json module) as Snodo uses it:
//   - A number literal with '.', 'e' or 'E' is a float, any other an exact integer of any size; "-0"
//     is the integer 0. A literal with an exponent and no fraction is read as prefix ".0e" exponent,
//     where the prefix of "0" and "-0" is "0", so "-0e0" is the float +0.0 while "-0.0" is -0.0.
//     A float beyond the float64 range is an error; one too small becomes zero.
//   - Strings must be valid UTF-8 without raw control characters; \u escapes must form valid code
//     points (surrogates only as a high-low pair).
//   - An object with a repeated name is an error (Snodo's JSONValue.decode rejects it; silently
//     keeping one of two values is how two parties come to read different data).
//   - Whitespace is space, tab, CR and LF; anything but whitespace after the value is an error.
//   - Nesting deeper than MaxDepth is an error (Elixir has no limit; the Go stack is not free).
//
// Writing is Elixir's JSON.encode! with object members sorted by the UTF-8 bytes of their names:
//   - Integers as their digits; floats in Erlang's shortest round-trip layout (AppendFloat).
//   - Strings escape only '"', '\\' and bytes below 0x20 (\b \t \n \f \r short, others \u00XX in
//     upper-case hex); '/', "<>&", DEL, U+2028/U+2029 and all other text are written raw.
//   - No whitespace.
//
// For objects of at most 32 members this is also exactly what Elixir writes for a decoded map
// (Erlang iterates small maps in key order); larger maps come out of Erlang in hash order, which
// Snodo never relies on: bindings are always sorted, and a payload is only ever verified as text.
//
// The encoder works directly from text to text without building a tree, and keeps its scratch space
// in a pooled Decoder, so canonicalizing a request costs no allocation beyond the output.
package canonical

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects the decoder accepts.
const MaxDepth = 10000

// SyntaxError reports why and where a text is not acceptable JSON.
type SyntaxError struct {
	Offset int // byte offset in the input
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("json: %s at offset %d", e.Msg, e.Offset) }

// Valid reports whether src is exactly one JSON value acceptable to the strict decoder.
func Valid(src []byte) bool {
	d := get(src)
	defer put(d)
	return d.skipValue() == nil && d.End() == nil
}

// Append appends the canonical form of the single JSON value in src to dst.
func Append(dst, src []byte) ([]byte, error) {
	d := get(src)
	defer put(d)
	dst, err := d.AppendValue(dst)
	if err != nil {
		return dst, err
	}
	return dst, d.End()
}

// AppendObject appends the canonical form of the JSON object in src to dst, leaving out its
// top-level members named in omit (nested members of the same names stay). Omitted members are still
// checked: they must be valid JSON and their names must not repeat.
func AppendObject(dst, src []byte, omit ...string) ([]byte, error) {
	d := get(src)
	defer put(d)
	dst, err := d.AppendObject(dst, omit)
	if err != nil {
		return dst, err
	}
	return dst, d.End()
}

// AppendString appends s as a JSON string. It fails if s is not valid UTF-8: Elixir cannot encode
// such a string either.
func AppendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, errors.New("json: string is not valid UTF-8")
	}
	return appendEscaped(dst, s), nil
}

var pool = sync.Pool{New: func() any { return new(Decoder) }}

func get(src []byte) *Decoder {
	d := pool.Get().(*Decoder)
	d.Reset(src)
	return d
}

func put(d *Decoder) {
	// Do not keep scratch space grown by an unusual input alive forever.
	if cap(d.keys) > 64<<10 || cap(d.tmp) > 64<<10 || cap(d.members) > 4096 {
		return
	}
	d.Reset(nil)
	pool.Put(d)
}

// GetDecoder returns a pooled Decoder reading src; give it back with PutDecoder.
func GetDecoder(src []byte) *Decoder { return get(src) }

// PutDecoder returns d to the pool. d must not be used afterwards.
func PutDecoder(d *Decoder) { put(d) }

// Decoder reads one JSON text. Besides the canonical encoder (AppendValue, AppendObject) it offers the
// few primitives a caller needs to walk a known structure: Consume, Integer, String and End.
// The zero value is ready after Reset.
type Decoder struct {
	src   []byte
	pos   int
	depth int

	keys    []byte   // decoded member names of the objects being encoded, innermost last
	members []member // their members, innermost object last
	tmp     []byte   // scratch for decoding escaped strings and for reordering members
}

// member is one member of an object being encoded: its decoded name, in src when it has no escapes
// (the common case) or else in keys, and its encoded `"name":value` in the output (empty when
// omitted).
type member struct {
	// prefix is the name's first eight bytes, big-endian and zero-padded: unequal prefixes order two
	// names as their bytes do, which settles almost every comparison without a call to bytes.Compare.
	prefix     uint64
	koff, klen int
	start, end int
	inKeys     bool
}

// srcPrefix is namePrefix(src[off:off+n]) without copying when eight bytes can be read at off,
// which is nearly always the case: a name is followed by at least its quote, a colon and a value.
func srcPrefix(src []byte, off, n int) uint64 {
	if off+8 > len(src) {
		return namePrefix(src[off : off+n])
	}
	x := binary.BigEndian.Uint64(src[off:])
	if n >= 8 {
		return x
	}
	return x &^ (^uint64(0) >> (8 * n)) // keep the first n bytes
}

// namePrefix returns the prefix of member for name.
func namePrefix(name []byte) uint64 {
	if len(name) >= 8 {
		return binary.BigEndian.Uint64(name)
	}
	var b [8]byte
	copy(b[:], name)
	return binary.BigEndian.Uint64(b[:])
}

// Reset makes d read src from the start.
func (d *Decoder) Reset(src []byte) {
	d.src, d.pos, d.depth = src, 0, 0
	d.keys, d.members, d.tmp = d.keys[:0], d.members[:0], d.tmp[:0]
}

func (d *Decoder) errorf(off int, format string, args ...any) error {
	return &SyntaxError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (d *Decoder) errUnexpected() error {
	if d.pos >= len(d.src) {
		return d.errorf(d.pos, "unexpected end of input")
	}
	return d.errorf(d.pos, "unexpected byte %q", d.src[d.pos])
}

func (d *Decoder) skipSpace() {
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// SkipSpace moves past whitespace.
func (d *Decoder) SkipSpace() { d.skipSpace() }

// Offset is the position of the decoder in its input.
func (d *Decoder) Offset() int { return d.pos }

// Consume skips whitespace and then c, reporting whether c was there.
func (d *Decoder) Consume(c byte) bool {
	if d.pos < len(d.src) && d.src[d.pos] > ' ' { // no whitespace: the common case
		if d.src[d.pos] == c {
			d.pos++
			return true
		}
		return false
	}
	d.skipSpace()
	if d.pos < len(d.src) && d.src[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// End skips whitespace and fails unless the input ends there.
func (d *Decoder) End() error {
	d.skipSpace()
	if d.pos != len(d.src) {
		return d.errorf(d.pos, "unexpected data after the JSON value")
	}
	return nil
}

// Integer reads the next value, which must be an integer literal, and returns its text (JSON allows
// no leading zeros, so the text is the integer's only spelling, except "-0" for 0).
func (d *Decoder) Integer() ([]byte, error) {
	d.skipSpace()
	start := d.pos
	isFloat, err := d.scanNumber()
	if err != nil {
		return nil, err
	}
	if isFloat {
		return nil, d.errorf(start, "number is a float, not an integer")
	}
	return d.src[start:d.pos], nil
}

// String reads the next value, which must be a string, and appends its decoded bytes to dst.
func (d *Decoder) String(dst []byte) ([]byte, error) {
	d.skipSpace()
	if d.pos >= len(d.src) || d.src[d.pos] != '"' {
		return dst, d.errUnexpected()
	}
	return d.decodeString(dst)
}

// AppendValue reads the next value and appends its canonical form to dst.
func (d *Decoder) AppendValue(dst []byte) ([]byte, error) {
	d.skipSpace()
	if d.pos >= len(d.src) {
		return dst, d.errUnexpected()
	}
	switch c := d.src[d.pos]; c {
	case '{':
		return d.appendObject(dst, nil)
	case '[':
		return d.appendArray(dst)
	case '"':
		return d.appendString(dst)
	case 't':
		return d.appendLiteral(dst, "true")
	case 'f':
		return d.appendLiteral(dst, "false")
	case 'n':
		return d.appendLiteral(dst, "null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return d.appendNumber(dst)
		}
		return dst, d.errUnexpected()
	}
}

// AppendObject reads the next value, which must be an object, and appends its canonical form to
// dst without its members named in omit.
func (d *Decoder) AppendObject(dst []byte, omit []string) ([]byte, error) {
	d.skipSpace()
	if d.pos >= len(d.src) || d.src[d.pos] != '{' {
		return dst, d.errorf(d.pos, "not a JSON object")
	}
	return d.appendObject(dst, omit)
}

// SkipValue reads past the next value, checking the syntax only: its objects may repeat a name. It
// is for text whose author is trusted, such as a payload whose MAC verified.
func (d *Decoder) SkipValue() error {
	d.skipSpace()
	if d.pos >= len(d.src) {
		return d.errUnexpected()
	}
	switch c := d.src[d.pos]; c {
	case '{', '[':
		if err := d.enter(); err != nil {
			return err
		}
		d.pos++
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		if d.Consume(end) {
			d.depth--
			return nil
		}
		for {
			if c == '{' {
				d.skipSpace()
				if d.pos >= len(d.src) || d.src[d.pos] != '"' {
					return d.errUnexpected()
				}
				if err := d.skipString(); err != nil {
					return err
				}
				if !d.Consume(':') {
					return d.errUnexpected()
				}
			}
			if err := d.SkipValue(); err != nil {
				return err
			}
			if d.Consume(',') {
				continue
			}
			if d.Consume(end) {
				d.depth--
				return nil
			}
			return d.errUnexpected()
		}
	case '"':
		return d.skipString()
	case 't':
		return d.skipLiteral("true")
	case 'f':
		return d.skipLiteral("false")
	case 'n':
		return d.skipLiteral("null")
	default:
		start := d.pos
		isFloat, err := d.scanNumber()
		if err == nil && isFloat {
			if _, err := parseFloat(d.src[start:d.pos]); err != nil {
				return d.errorf(start, "%v", err)
			}
		}
		return err
	}
}

func (d *Decoder) skipString() error {
	if end, ok := d.plainString(); ok {
		d.pos = end + 1
		return nil
	}
	start := len(d.tmp)
	var err error
	d.tmp, err = d.decodeString(d.tmp)
	d.tmp = d.tmp[:start]
	return err
}

func (d *Decoder) skipValue() error {
	// Validation is encoding into scratch space that is then dropped: the same rules, duplicate
	// names included. It is not on any hot path.
	_, err := d.AppendValue(nil)
	return err
}

func (d *Decoder) appendLiteral(dst []byte, lit string) ([]byte, error) {
	if err := d.skipLiteral(lit); err != nil {
		return dst, err
	}
	return append(dst, lit...), nil
}

func (d *Decoder) skipLiteral(lit string) error {
	if len(d.src)-d.pos < len(lit) || string(d.src[d.pos:d.pos+len(lit)]) != lit {
		return d.errorf(d.pos, "invalid literal")
	}
	d.pos += len(lit)
	return nil
}

func (d *Decoder) enter() error {
	d.depth++
	if d.depth > MaxDepth {
		return d.errorf(d.pos, "nesting deeper than %d", MaxDepth)
	}
	return nil
}

func (d *Decoder) appendArray(dst []byte) ([]byte, error) {
	if err := d.enter(); err != nil {
		return dst, err
	}
	d.pos++ // '['
	dst = append(dst, '[')
	if d.Consume(']') {
		d.depth--
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = d.AppendValue(dst); err != nil {
			return dst, err
		}
		if d.Consume(',') {
			dst = append(dst, ',')
			continue
		}
		if d.Consume(']') {
			d.depth--
			return append(dst, ']'), nil
		}
		return dst, d.errUnexpected()
	}
}

func (d *Decoder) appendObject(dst []byte, omit []string) ([]byte, error) {
	if err := d.enter(); err != nil {
		return dst, err
	}
	d.pos++ // '{'
	dst = append(dst, '{')
	memBase, keyBase := len(d.members), len(d.keys)
	written := 0
	// inOrder: every name so far has a greater prefix than the one before, so the names are sorted
	// and distinct, and sortMembers has nothing to do.
	inOrder, last := true, uint64(0)
	if !d.Consume('}') {
		for {
			d.skipSpace()
			if d.pos >= len(d.src) || d.src[d.pos] != '"' {
				return dst, d.errUnexpected()
			}
			m := member{start: len(dst)}
			var key []byte
			if end, ok := d.plainString(); ok {
				// No escapes and nothing to escape: the name is its own canonical form.
				m.koff, m.klen = d.pos+1, end-d.pos-1
				key = d.src[m.koff:end]
				m.prefix = srcPrefix(d.src, m.koff, m.klen)
				dst = append(dst, d.src[d.pos:end+1]...)
				d.pos = end + 1
			} else {
				koff := len(d.keys)
				var err error
				if d.keys, err = d.decodeString(d.keys); err != nil {
					return dst, err
				}
				m.koff, m.klen, m.inKeys = koff, len(d.keys)-koff, true
				key = d.keys[koff:]
				m.prefix = namePrefix(key)
				dst = appendEscaped(dst, key)
			}
			if !d.Consume(':') {
				return dst, d.errUnexpected()
			}
			dst = append(dst, ':')
			var err error
			if dst, err = d.AppendValue(dst); err != nil {
				return dst, err
			}
			// n == string(key) compares without copying key, as a conversion to pass it might.
			if slices.ContainsFunc(omit, func(n string) bool { return n == string(key) }) {
				dst = dst[:m.start]
				m.end = m.start
			} else {
				m.end = len(dst) // the span excludes the comma that follows
				dst = append(dst, ',')
				written++
			}
			if len(d.members) > memBase && m.prefix <= last {
				inOrder = false
			}
			last = m.prefix
			d.members = append(d.members, m)
			if d.Consume(',') {
				continue
			}
			if d.Consume('}') {
				break
			}
			return dst, d.errUnexpected()
		}
	}
	if written == 0 {
		dst = append(dst, '}')
	} else {
		dst[len(dst)-1] = '}'
	}
	if !inOrder {
		if err := d.sortMembers(dst, memBase); err != nil {
			return dst, err
		}
	}
	d.members, d.keys = d.members[:memBase], d.keys[:keyBase]
	d.depth--
	return dst, nil
}

// sortMembers puts the members d.members[memBase:] of the object just written to dst in the order
// of their names' bytes, and rejects a repeated name. Members arrive sorted more often than not, so that is checked
// first.
func (d *Decoder) sortMembers(dst []byte, memBase int) error {
	ms := d.members[memBase:]
	first := len(ms) // the first position whose member moved
	if len(ms) <= 16 {
		// Insertion sort: no work for sorted members, and every pair that ends up adjacent has
		// been compared, so a repeated name cannot go unnoticed.
		for i := 1; i < len(ms); i++ {
			m := ms[i]
			j := i
			for ; j > 0; j-- {
				p := &ms[j-1]
				if p.prefix < m.prefix { // d.compare, its common case inlined
					break
				}
				if p.prefix == m.prefix {
					c := bytes.Compare(d.key(*p), d.key(m))
					if c == 0 {
						return d.errorf(d.pos, "object has the name %q twice", d.key(m))
					}
					if c < 0 {
						break
					}
				}
				ms[j] = *p
			}
			if j != i {
				ms[j] = m
				first = min(first, j)
			}
		}
	} else {
		if !slices.IsSortedFunc(ms, d.compare) {
			slices.SortFunc(ms, d.compare)
			first = 0
		}
		for i := 1; i < len(ms); i++ {
			if d.compare(ms[i-1], ms[i]) == 0 {
				return d.errorf(d.pos, "object has the name %q twice", d.key(ms[i]))
			}
		}
	}
	if first == len(ms) {
		return nil
	}
	// Rewrite the moved members in place, in sorted order. Every written member is followed by one
	// byte (',' or the closing '}'), so the object keeps its length, and the members before first
	// stay where they are. The moved ones were written from the smallest start among them on.
	from := ms[first].start
	for _, m := range ms[first+1:] {
		from = min(from, m.start)
	}
	d.tmp = append(d.tmp[:0], dst[from:]...)
	w := from
	for _, m := range ms[first:] {
		if m.end == m.start {
			continue // omitted
		}
		w += copy(dst[w:], d.tmp[m.start-from:m.end-from])
		dst[w] = ','
		w++
	}
	if w > from { // else every moved member was omitted, and what follows them is just the '}'
		dst[w-1] = '}'
	}
	return nil
}

func (d *Decoder) compare(a, b member) int {
	if a.prefix != b.prefix {
		if a.prefix < b.prefix {
			return -1
		}
		return 1
	}
	return bytes.Compare(d.key(a), d.key(b))
}

func (d *Decoder) key(m member) []byte {
	if m.inKeys {
		return d.keys[m.koff : m.koff+m.klen]
	}
	return d.src[m.koff : m.koff+m.klen]
}

// plainString reports whether the string at d.pos has neither escapes nor control characters, and
// if so where its closing quote is. Invalid UTF-8 also returns false, for decodeString to report.
func (d *Decoder) plainString() (end int, ok bool) {
	src := d.src
	i := d.pos + 1
	for {
		// Find the next special byte (a control byte, '"', '\\' or non-ASCII), eight bytes at a
		// time. In each term of the mask the lowest set high bit marks a special byte exactly
		// (a borrow only carries out of a byte that is itself special), so its position is the
		// first special byte.
		if i+8 <= len(src) {
			x := binary.LittleEndian.Uint64(src[i:])
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			q, b := x^(ones*'"'), x^(ones*'\\')
			m := ((x-ones*0x20)&^x | (q-ones)&^q | (b-ones)&^b | x) & highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		} else {
			for i < len(src) && byteClass[src[i]] == 0 {
				i++
			}
			if i >= len(src) {
				return 0, false
			}
		}
		switch c := src[i]; {
		case c == '"':
			return i, true
		case c >= 0x80:
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n == 1 {
				return 0, false
			}
			i += n
		default:
			return 0, false
		}
	}
}

// scanNumber moves past a JSON number literal and reports whether it is a float.
func (d *Decoder) scanNumber() (isFloat bool, err error) {
	src, i := d.src, d.pos
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		i = skipDigits(src, i+1)
	default:
		d.pos = i
		return false, d.errUnexpected()
	}
	ok := true
	if i < len(src) && src[i] == '.' {
		isFloat = true
		i, ok = scanDigits(src, i+1)
	}
	if ok && i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		isFloat = true
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		i, ok = scanDigits(src, i)
	}
	d.pos = i
	if !ok {
		return false, d.errUnexpected()
	}
	return isFloat, nil
}

// scanDigits returns the end of the one or more digits at src[i:], or i and false if there is none.
func scanDigits(src []byte, i int) (int, bool) {
	if i >= len(src) || src[i] < '0' || src[i] > '9' {
		return i, false
	}
	return skipDigits(src, i+1), true
}

// skipDigits returns the end of the digits, if any, at src[i:].
func skipDigits(src []byte, i int) int {
	for i < len(src) && src[i] >= '0' && src[i] <= '9' {
		i++
	}
	return i
}

func (d *Decoder) appendNumber(dst []byte) ([]byte, error) {
	start := d.pos
	isFloat, err := d.scanNumber()
	if err != nil {
		return dst, err
	}
	lit := d.src[start:d.pos]
	if !isFloat {
		if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
			return append(dst, '0'), nil
		}
		return append(dst, lit...), nil
	}
	if out, ok := appendShortDecimal(dst, lit); ok {
		return out, nil
	}
	f, err := parseFloat(lit)
	if err != nil {
		return dst, d.errorf(start, "%v", err)
	}
	return AppendFloat(dst, f), nil
}

// parseFloat reads a float literal as Erlang's json module does (see the package comment).
func parseFloat(lit []byte) (float64, error) {
	if bytes.IndexByte(lit, '.') < 0 && (lit[0] == '0' || lit[0] == '-' && lit[1] == '0') {
		return 0, nil // "0e…" and "-0e…" keep no sign
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return 0, fmt.Errorf("float %.40q is out of range", lit)
	}
	return f, nil
}

// byteClass sorts the bytes of a JSON string: 0 copies as is.
var byteClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 1
	}
	t['"'], t['\\'] = 1, 1
	for c := 0x80; c < 0x100; c++ {
		t[c] = 2
	}
	return t
}()

// appendString encodes the string at d.pos. A string without escapes, the common case, is copied.
func (d *Decoder) appendString(dst []byte) ([]byte, error) {
	if end, ok := d.plainString(); ok {
		dst = append(dst, d.src[d.pos:end+1]...)
		d.pos = end + 1
		return dst, nil
	}
	// Escapes, or an error: decode, then write the canonical escapes.
	start := len(d.tmp)
	var err error
	if d.tmp, err = d.decodeString(d.tmp); err != nil {
		return dst, err
	}
	dst = appendEscaped(dst, d.tmp[start:])
	d.tmp = d.tmp[:start]
	return dst, nil
}

// decodeString appends the bytes of the string at d.pos to dst.
func (d *Decoder) decodeString(dst []byte) ([]byte, error) {
	src := d.src
	i := d.pos + 1
	run := i
	for i < len(src) {
		for i < len(src) && byteClass[src[i]] == 0 {
			i++
		}
		if i >= len(src) {
			break
		}
		c := src[i]
		switch byteClass[c] {
		case 2:
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n == 1 {
				return dst, d.errorf(i, "invalid UTF-8 in string")
			}
			i += n
			continue
		}
		switch {
		case c == '"':
			dst = append(dst, src[run:i]...)
			d.pos = i + 1
			return dst, nil
		case c < 0x20:
			return dst, d.errorf(i, "control character %#02x in string", c)
		}
		// A backslash.
		dst = append(dst, src[run:i]...)
		if i+1 >= len(src) {
			return dst, d.errorf(i, "unterminated escape")
		}
		switch e := src[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
			i += 2
		case 'b':
			dst, i = append(dst, '\b'), i+2
		case 'f':
			dst, i = append(dst, '\f'), i+2
		case 'n':
			dst, i = append(dst, '\n'), i+2
		case 'r':
			dst, i = append(dst, '\r'), i+2
		case 't':
			dst, i = append(dst, '\t'), i+2
		case 'u':
			r, ok := hex4(src, i+2)
			if !ok {
				return dst, d.errorf(i, "invalid \\u escape")
			}
			n := 6
			if r >= 0xD800 && r <= 0xDBFF {
				lo, ok := rune(0), false
				if i+7 < len(src) && src[i+6] == '\\' && src[i+7] == 'u' {
					lo, ok = hex4(src, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return dst, d.errorf(i, "high surrogate escape without a low surrogate")
				}
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				n = 12
			} else if r >= 0xDC00 && r <= 0xDFFF {
				return dst, d.errorf(i, "lone low surrogate escape")
			}
			dst = utf8.AppendRune(dst, r)
			i += n
		default:
			return dst, d.errorf(i, "invalid escape \\%c", e)
		}
		run = i
	}
	return dst, d.errorf(i, "unterminated string")
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	var r rune
	for _, c := range src[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

const hexUpper = "0123456789ABCDEF"

// appendEscaped writes s, valid UTF-8, as a JSON string the way Elixir does.
func appendEscaped[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[run:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexUpper[c>>4], hexUpper[c&0xF])
		}
		run = i + 1
	}
	dst = append(dst, s[run:]...)
	return append(dst, '"')
}
