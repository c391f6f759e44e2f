package watermill

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	wm "github.com/ThreeDotsLabs/watermill"
)

// slogBridge is a slog.Handler writing to a Watermill logger, so the equeue
// consumers a Subscriber starts log where the rest of Watermill does. Levels
// shift down one step: equeue warnings (a failed pull, a dead-lettered
// message) become Watermill info, equeue info becomes debug, debug becomes
// trace; errors stay errors.
type slogBridge struct {
	l      wm.LoggerAdapter
	attrs  []slog.Attr
	prefix string // group prefix, "a.b."
}

func newSlogLogger(l wm.LoggerAdapter) *slog.Logger {
	if _, nop := l.(wm.NopLogger); nop {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(&slogBridge{l: l})
}

func (h *slogBridge) Enabled(context.Context, slog.Level) bool { return true }

func (h *slogBridge) Handle(_ context.Context, r slog.Record) error {
	fields := make(wm.LogFields, len(h.attrs)+r.NumAttrs())
	var errAttr error
	var add func(prefix string, a slog.Attr)
	add = func(prefix string, a slog.Attr) {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			p := prefix
			if a.Key != "" {
				p += a.Key + "."
			}
			for _, g := range v.Group() {
				add(p, g)
			}
			return
		}
		if a.Key == "" {
			return
		}
		if e, ok := v.Any().(error); ok && errAttr == nil && a.Key == "err" {
			errAttr = e
			return
		}
		fields[prefix+a.Key] = v.Any()
	}
	for _, a := range h.attrs {
		add("", a) // attrs carry their own prefix, see WithAttrs
	}
	r.Attrs(func(a slog.Attr) bool {
		add(h.prefix, a)
		return true
	})
	switch {
	case r.Level >= slog.LevelError:
		if errAttr == nil {
			errAttr = fmt.Errorf("%s", r.Message)
		}
		h.l.Error(r.Message, errAttr, fields)
	case r.Level >= slog.LevelWarn:
		if errAttr != nil {
			fields["err"] = errAttr.Error()
		}
		h.l.Info(r.Message, fields)
	case r.Level >= slog.LevelInfo:
		if errAttr != nil {
			fields["err"] = errAttr.Error()
		}
		h.l.Debug(r.Message, fields)
	default:
		if errAttr != nil {
			fields["err"] = errAttr.Error()
		}
		h.l.Trace(r.Message, fields)
	}
	return nil
}

func (h *slogBridge) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &slogBridge{l: h.l, prefix: h.prefix, attrs: append([]slog.Attr(nil), h.attrs...)}
	for _, a := range attrs {
		if h.prefix != "" {
			a.Key = h.prefix + a.Key
		}
		n.attrs = append(n.attrs, a)
	}
	return n
}

func (h *slogBridge) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &slogBridge{l: h.l, attrs: h.attrs, prefix: h.prefix + strings.TrimSuffix(name, ".") + "."}
}
