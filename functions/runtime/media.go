package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// dispatchMedia answers ctx.media.stat and ctx.media.read. A read takes
// at most MaxMediaRead bytes (its default), and up to MaxMediaReadNetwork
// with the network capability: more bytes in one run are a capability, as
// calling out is.
func dispatchMedia(ctx context.Context, host Host, network bool, op, arg string) (any, error) {
	mh, ok := host.(MediaHost)
	if !ok {
		return nil, errors.New("ctx.media is not available in this process")
	}
	var a struct {
		Ref      any   `json:"ref"`
		MaxBytes int64 `json:"max_bytes"`
		Bytes    bool  `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(arg), &a); err != nil {
		return nil, fmt.Errorf("ctx.media: %w", err)
	}
	if op == "media_stat" {
		return mh.MediaStat(ctx, a.Ref)
	}
	limit := int64(MaxMediaRead)
	if network {
		limit = MaxMediaReadNetwork
	}
	switch {
	case a.MaxBytes <= 0:
		a.MaxBytes = MaxMediaRead
	case a.MaxBytes > limit && !network:
		return nil, fmt.Errorf("ctx.media.read: max_bytes %d is over %d; more needs the network capability", a.MaxBytes, limit)
	case a.MaxBytes > limit:
		return nil, fmt.Errorf("ctx.media.read: max_bytes %d is over %d", a.MaxBytes, limit)
	}
	return mh.MediaRead(ctx, a.Ref, a.MaxBytes, a.Bytes)
}
