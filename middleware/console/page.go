package console

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"path"
)

// The page, its script and its style sheet. html/template escapes every
// value by where it stands (text, attribute, URL): a key, a policy
// name, a reason or an error is always text on the page, never markup.
//
//go:embed assets
var assets embed.FS

var pageTemplate = template.Must(template.New("console.html").Funcs(template.FuncMap{"key64": key64, "shown": shown, "shownText": shownText}).ParseFS(assets, "assets/console.html"))

// pageData is what the page shows: a key's report, or the form to look
// one up, and a listing when the service gave a lister.
type pageData struct {
	Key    string
	Report *report
	Token  string
	// CanChange shows the forms to reset and refund: the person may
	// change.
	CanChange bool
	Notice    string // what was just done, from the signed redirect after a change
	Problem   string // why a request was refused, or a read failed
	CanList   bool
	Prefix    string
	Keys      []string
	More      bool
	Limited   *limitedView // with Config.Refusals, when no key is asked
}

// page answers GET ./ and GET ./?key=K: the lookup form, K's windows and
// slots if asked, and the keys Config.List gives if there is one and no
// key was asked.
func (h *handler) page(w http.ResponseWriter, r *http.Request, who string, may Access) {
	q := r.URL.Query()
	d := pageData{CanChange: mayChange(who, may) == nil}
	status := http.StatusOK
	switch _, asked := q["key"]; {
	case asked:
		key := q.Get("key")
		if err := checkKey("key", key); err != nil {
			h.observe(Event{At: h.clock.Now(), Who: who, Action: "lookup", Err: err, Request: r})
			d.Problem, status = err.Error(), errorStatus(err)
			break
		}
		d.Key, d.Report = key, h.lookup(r, who, "lookup", key)
		d.Report.Refused = h.refused(r, key)
		d.Notice = h.readNotice(who, key, q.Get("done"))
		status = reportStatus(d.Report)
	default:
		d.Limited = h.limitedNow(r, who)
		if h.list == nil {
			break
		}
		// A refused prefix is not echoed: it may be 4 KiB and more,
		// or not UTF-8 in a UTF-8 page.
		if p, err := okPrefix(r); err == nil {
			d.Prefix = p
		}
		var err error
		if d.Keys, d.More, err = h.listKeys(r, who); err != nil {
			d.Problem, status = err.Error(), errorStatus(err)
		}
	}
	h.render(w, r, who, d, status)
}

// render writes the page with status. It renders into a buffer first,
// so that a template error is a 500, not half a page.
func (h *handler) render(w http.ResponseWriter, r *http.Request, who string, d pageData, status int) {
	d.CanList = h.list != nil
	if d.CanChange {
		d.Token = h.token(who, h.clock.Now())
	}
	if d.Report != nil && d.Report.Failed && d.Problem == "" {
		d.Problem = "A store could not be read: the limits it keeps are not shown (the reason is beside each)."
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, d); err != nil {
		http.Error(w, "console: page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

// assetTypes are the files served beside the page, by name.
var assetTypes = map[string]string{
	"console.js":  "text/javascript; charset=utf-8",
	"console.css": "text/css; charset=utf-8",
}

// serveAsset writes the script or the style sheet called name, and
// reports whether there is one.
func serveAsset(w http.ResponseWriter, name string) bool {
	ct, ok := assetTypes[name]
	if !ok {
		return false
	}
	b, err := assets.ReadFile(path.Join("assets", name))
	if err != nil {
		return false
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
	return true
}
