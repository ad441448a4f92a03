package health

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseConditionAndHolds(t *testing.T) {
	for in, want := range map[string]Condition{"== 1": {"==", 1}, "<0.05": {"<", 0.05}, " >= 99 ": {">=", 99}, "!= 0": {"!=", 0}, "<= -1": {"<=", -1}} {
		c, err := ParseCondition(in)
		require.NoError(t, err, in)
		require.Equal(t, want, c, in)
	}
	for _, bad := range []string{"", "1", "= 1", "== one", "~ 3"} {
		_, err := ParseCondition(bad)
		require.Error(t, err, bad)
	}
	c, _ := ParseCondition("< 0.05")
	require.True(t, c.Holds(0.01))
	require.False(t, c.Holds(0.05))
}

func TestJudge(t *testing.T) {
	healthy, _ := ParseCondition("== 1")
	require.Equal(t, Inconclusive, Judge(healthy, nil).Verdict, "no data proves nothing")
	r := Judge(healthy, []Sample{{"a", 1}, {"b", 1}})
	require.Equal(t, Pass, r.Verdict)
	require.Equal(t, "2 of 2 readings == 1", r.Reason)
	r = Judge(healthy, []Sample{{`{target="sp/sled/2"}`, 0}, {`{target="sp/sled/1"}`, 1}, {`{target="sp/sled/0"}`, 0}})
	require.Equal(t, Fail, r.Verdict)
	require.Equal(t, `2 of 3 readings not == 1, e.g. {target="sp/sled/0"} = 0`, r.Reason)
	require.Len(t, r.Failing, 2)
}
