package version

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The MGS kinds' cases (they were kinds/mgsupdate's CompareVersions').
func TestMGS(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.0.0", "1.0.0", 0}, {"1.0.0", "1.0.1", -1}, {"1.10.0", "1.9.2", 1}, {"2", "1.99", 1},
		{"1.0", "1.0.0", -1}, {"1.0.0-rc1", "1.0.0-rc2", -1}, {"invalid", "1.0.0", 1},
		{"1.0.0+b", "1.0.0", 1},
	} {
		assert.Equal(t, c.want, Compare(c.a, c.b, MGS), "%s vs %s", c.a, c.b)
	}
}

// The boot image bump's release cases (they were kinds/bootimage's
// CompareReleaseVersions').
func TestRelease(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"4.9.0", "4.16.0", -1}, // a string compare would say 4.9 > 4.16
		{"4.16.0", "4.16.0", 0},
		{"4.16.10", "4.16.9", 1},
		{"5.0.0", "4.99.99", 1},
		{"4.16.0-rc.1", "4.16.0", 0},
	} {
		got, err := CompareStrict(c.a, c.b, Release)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%s vs %s", c.a, c.b)
	}
	for _, bad := range []string{"4.16", "4.x.0", "", "4.16.0.1", "-1.2.3"} {
		_, err := CompareStrict(bad, "4.16.0", Release)
		assert.EqualError(t, err, `version "`+bad+`" is not a release version x.y.z`, bad)
		_, err = CompareStrict("4.16.0", bad, Release)
		assert.Error(t, err, bad)
	}
}

// RHCOS versions compare by their RHEL major.minor, in every scheme the
// operator reads.
func TestRHCOS(t *testing.T) {
	for _, c := range []struct {
		v    string
		want []int
	}{
		{"9.6", []int{9, 6}}, {"9.6.20250523-0", []int{9, 6}}, {"416.94.202510081640-0", []int{9, 4}},
		{"418.810.202510081640-0", []int{8, 10}},
	} {
		got, err := Parse(c.v, RHCOS)
		require.NoError(t, err, c.v)
		assert.Equal(t, c.want, got, c.v)
	}
	got, err := CompareStrict("9.2", "9.10.20250523-0", RHCOS)
	require.NoError(t, err)
	assert.Equal(t, -1, got)
	for bad, msg := range map[string]string{
		"9":                    `RHCOS version "9" is not major.minor[.build]`,
		"9.x":                  `RHCOS version "9.x" is not major.minor[.build]`,
		"9.6.2025":             `RHCOS version "9.6.2025" has a build stamp of neither 8 nor 12 digits`,
		"416.94":               `RHCOS version "416.94" uses the old <ocp>.<rhel> scheme without its build stamp; state a major.minor RHCOS version`,
		"416.9.202510081640-0": `RHCOS version "416.9.202510081640-0" is not major.minor[.build]`,
	} {
		_, err := CompareStrict(bad, "9.2", RHCOS)
		assert.EqualError(t, err, msg, bad)
	}
}
