/*
Copyright 2026 The mrtr-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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

	if math.Abs(f) < 1<<53 && decimalLayout(n, exp) {
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

// decimalLayout reports whether AppendFloat writes n significant digits with decimal exponent exp
// (d.ddd times 10^exp) in the decimal rather than the scientific layout, for a float below 2^53 in
// magnitude. The lengths compared are without the sign, which both forms share.
func decimalLayout(n, exp int) bool {
	var buf [8]byte
	sciLen := 2 + max(n-1, 1) + 1 + len(strconv.AppendInt(buf[:0], int64(exp), 10))
	var decLen int
	if exp >= 0 {
		decLen = exp + 1 + 1 + max(n-exp-1, 1) // integer digits, '.', fraction digits or "0"
	} else {
		decLen = 2 + (-exp - 1) + n
	}
	return decLen <= sciLen
}

// appendShortDecimal appends the float literal lit unchanged if it is already in AppendFloat's form,
// which is the common case of prices and ratios ("19.99", "0.25"), sparing the parse and the
// shortest-digits search. That holds for a plain decimal [-]I.F (no exponent, F not ending in '0')
// of at most 15 significant digits whose layout is decimal: no two decimals of 15 or fewer
// significant digits read as the same float64 (DBL_DIG), so its digits are the shortest that read
// back as its value, and the decimal layout of those digits is lit itself.
func appendShortDecimal(dst, lit []byte) ([]byte, bool) {
	if !isShortDecimal(lit) {
		return dst, false
	}
	return append(dst, lit...), true
}

// isShortDecimal reports whether appendShortDecimal would append lit.
func isShortDecimal(lit []byte) bool {
	s := lit
	if s[0] == '-' {
		s = s[1:]
	}
	dot := 0
	for dot < len(s) && s[dot] != '.' {
		dot++
	}
	if dot == len(s) || s[len(s)-1] == '0' {
		return false
	}
	frac := s[dot+1:]
	for _, c := range frac {
		if c < '0' || c > '9' {
			return false // an exponent
		}
	}
	var n, exp int
	if s[0] == '0' { // JSON allows no leading zeros: the integer part is "0"
		z := 0
		for frac[z] == '0' { // frac ends in a non-zero digit
			z++
		}
		n, exp = len(frac)-z, -z-1
	} else {
		n, exp = dot+len(frac), dot-1
	}
	// The exponent bound keeps the value far from the subnormals, where DBL_DIG does not hold.
	return n <= 15 && exp >= -300 && decimalLayout(n, exp)
}
