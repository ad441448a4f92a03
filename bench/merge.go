package bench

import (
	"errors"
	"io/fs"
)

// sameRun says whether two runs measure the same thing (a newer one
// replaces the older in the report).
func sameRun(a, b Run) bool {
	return a.Kind == b.Kind && a.N == b.N && a.SpeedUp == b.SpeedUp && a.Concurrency == b.Concurrency
}

// putRun replaces the run of runs that measures the same thing as r, or
// appends r.
func putRun(runs []Run, r Run) []Run {
	for i := range runs {
		if sameRun(runs[i], r) {
			runs[i] = r
			return runs
		}
	}
	return append(runs, r)
}

func (r *Report) put(run Run) { r.Runs = putRun(r.Runs, run) }

// keepPrevious takes the runs of the report at path (if there is one), so
// that this invocation's runs are added to them.
func (r *Report) keepPrevious(path string) error {
	prev, err := ReadReport(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	r.Runs = prev.Runs
	r.HistoryCheck = prev.HistoryCheck
	r.Errors = prev.Errors
	r.KeptFrom = append(prev.KeptFrom, prev.Started)
	return nil
}

// backfill derives the figures a results.json written before they existed
// lacks, from the ones it has.
func (r *Run) backfill() {
	if r.TemporalCPUPerTgtMs == 0 && r.N > 0 {
		r.TemporalCPUPerTgtMs = r.TemporalCPUSec * 1000 / float64(r.N)
	}
	if r.MaxRunEvents == 0 {
		r.MaxRunEvents = max(r.TargetWorkflowMax, r.ParentMaxEvents)
	}
}
