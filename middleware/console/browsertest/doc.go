// Package browsertest drives the support console (middleware/console) in
// a real browser: headless Chromium, Debian's chromium package, through
// chromedp, on loopback. It is a module of its own so that the root
// go.mod never requires a browser driver; it has tests only.
//
// The tests open the page, look a key up by typing it, watch its windows
// fill while the page is open, press Reset and see the key admitted
// again, on the memory store and on Redis (127.0.0.1:6379, a key prefix
// per test); they show that a key of markup renders as text, and that a
// POST without the token, or from another origin with it, is refused;
// and that a viewer sees a key the middleware refused (Config.Refusals)
// under "Limited now", and on its page the refused window, after that
// window has ended on the site's clock.
// One of them takes the screenshot docs/console.md shows: make
// console-screenshot writes it to docs/console.png.
//
// Chromium is found on PATH (chromium, chromium-browser, google-chrome).
// Under CI (CI=true) a missing browser fails the tests; elsewhere they
// skip, saying how to install it (scripts/ensure-chromium.sh).
package browsertest
