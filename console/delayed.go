package console

import (
	"net/http"

	"github.com/equeue-go/equeue"
)

type delayedData struct {
	Supported bool
	Info      equeue.DelayedInfo
}

func (delayedData) refresh() int { return 5 }

// delayedShown is how many of the soonest delayed messages the page lists.
const delayedShown = 100

func (c *Console) delayedPage(w http.ResponseWriter, r *http.Request, v viewer) {
	d := delayedData{}
	if dl, ok := c.b.(delayedLister); ok {
		ctx, cancel := c.ctx(r)
		defer cancel()
		info, err := dl.Delayed(ctx, delayedShown)
		if err != nil {
			c.brokerFail(w, r, v, "listing delayed messages", err)
			return
		}
		d.Supported, d.Info = true, info
	}
	c.render(w, r, v, http.StatusOK, "delayed", "Delayed messages", d)
}
