package runtime

import (
	"fmt"
	"time"

	"bulkhead.dev/bulkhead/specs"
)

// AnnotationMaxLifetime lets a job ask for a shorter wall-clock lifetime
// than its profile's max_lifetime. It can only shorten: a longer value (or
// "0", none) is clamped to the profile's.
const AnnotationMaxLifetime = "bulkhead.dev/max-lifetime"

// LayerWatchdog enforces max_lifetime: a process outside the sandbox that
// kills every process of the container through the backend.
const LayerWatchdog specs.Layer = "watchdog + backend kill --all"

const lifetimeField = "annotations[" + AnnotationMaxLifetime + "]"

// decideLifetime returns the container's effective lifetime (0 for none)
// from the profile's max_lifetime and the job's annotation, with the
// decisions that say how it was reached. An annotation that is not a
// duration is refused: a job that asked for a deadline must not run
// without one.
func decideLifetime(p *specs.Profile, annotations map[string]string) (time.Duration, []specs.Decision, error) {
	limit, err := p.Lifetime()
	if err != nil {
		return 0, nil, err
	}
	asked, ok := annotations[AnnotationMaxLifetime]
	if !ok {
		if limit == 0 {
			return 0, nil, nil
		}
		return limit, []specs.Decision{{Rule: "lifetime", Field: "max_lifetime", Action: specs.Added,
			After: limit.String(), Layer: LayerWatchdog,
			Why: fmt.Sprintf("profile %s: every process is killed %s after start", p.Name, limit)}}, nil
	}
	want, perr := time.ParseDuration(asked)
	if asked == "0" {
		want, perr = 0, nil
	}
	if perr != nil || want < 0 {
		d := specs.Decision{Rule: "lifetime", Field: lifetimeField, Action: specs.Refused, Before: asked,
			Layer: LayerWatchdog, Why: "not a duration such as 90s or 30m"}
		return 0, []specs.Decision{d}, &specs.RefusalError{Profile: p.Name, Decisions: []specs.Decision{d}}
	}
	switch {
	case limit > 0 && (want == 0 || want > limit):
		asks := want.String()
		if want == 0 {
			asks = "no limit"
		}
		return limit, []specs.Decision{{Rule: "lifetime", Field: lifetimeField, Action: specs.Tightened,
			Before: asked, After: limit.String(), Layer: LayerWatchdog,
			Why: fmt.Sprintf("clamped: the annotation asks for %s, longer than profile %s's max_lifetime %s; an annotation may only shorten it", asks, p.Name, limit)}}, nil
	case want == 0:
		return 0, []specs.Decision{{Rule: "lifetime", Field: lifetimeField, Action: specs.Kept,
			Before: asked, After: "0", Layer: specs.LayerNone, Why: "no lifetime asked for and none in the profile"}}, nil
	default:
		why := fmt.Sprintf("honoured: shorter than profile %s's max_lifetime %s", p.Name, limit)
		if limit == 0 {
			why = fmt.Sprintf("honoured: profile %s sets no max_lifetime", p.Name)
		}
		return want, []specs.Decision{{Rule: "lifetime", Field: lifetimeField, Action: specs.Kept,
			Before: asked, After: want.String(), Layer: LayerWatchdog, Why: why}}, nil
	}
}

// withLifetime appends the lifetime decisions to the rules' and keeps the
// first error; `check` shows them as create decides them.
func withLifetime(p *specs.Profile, annotations map[string]string, decisions []specs.Decision, err error) (time.Duration, []specs.Decision, error) {
	lifetime, more, lerr := decideLifetime(p, annotations)
	decisions = append(decisions, more...)
	if err == nil {
		err = lerr
	}
	return lifetime, decisions, err
}
