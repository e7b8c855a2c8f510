package canonical

import (
	"math"
	"strconv"
)

// AppendFloat appends f in the layout of Erlang's float_to_binary(F, [short]), which Elixir's JSON
// encoder uses: the shortest digits that read back as f; below 2^53 in magnitude, the shorter of the
// decimal ("1200.5", "0.0001") and the scientific ("1.2e3", "1.2e-4") form, decimal on a tie; from
// 2^53 up always scientific. The mantissa always has a '.', and the exponent has neither '+' nor
// leading zeros. f must be finite: JSON has no NaN or infinity.
func AppendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("canonical: AppendFloat of a non-finite float")
	}
	// Go's shortest round-trip digits are Erlang's: both print the shortest string that reads back
	// as f, choosing the one nearest to f.
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // [-]d[.ddd]e±dd
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
	}
	var digits [20]byte
	n := 0
	i := 0
	for ; b[i] != 'e'; i++ {
		if b[i] != '.' {
			digits[n] = b[i]
			n++
		}
	}
	exp := 0
	neg := b[i+1] == '-'
	for _, c := range b[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	d := digits[:n]

	// Lengths without the sign, which both forms share.
	sciLen := 2 + max(n-1, 1) + 1 + len(strconv.AppendInt(buf[:0], int64(exp), 10))
	var decLen int
	if exp >= 0 {
		decLen = max(n, exp+1) + 1 + max(n-exp-1, 1)
	} else {
		decLen = 2 + (-exp - 1) + n
	}
	if math.Abs(f) < 1<<53 && decLen <= sciLen {
		switch {
		case exp < 0:
			dst = append(dst, '0', '.')
			for j := 0; j < -exp-1; j++ {
				dst = append(dst, '0')
			}
			return append(dst, d...)
		case n <= exp+1:
			dst = append(dst, d...)
			for j := n; j < exp+1; j++ {
				dst = append(dst, '0')
			}
			return append(dst, '.', '0')
		default:
			dst = append(dst, d[:exp+1]...)
			dst = append(dst, '.')
			return append(dst, d[exp+1:]...)
		}
	}
	dst = append(dst, d[0], '.')
	if n > 1 {
		dst = append(dst, d[1:]...)
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, 'e')
	return strconv.AppendInt(dst, int64(exp), 10)
}
