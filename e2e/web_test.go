package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

// seedWebsite publishes the example catalog and two generated ones through the API: 68 functions,
// four pages of results, two publishers.
func seedWebsite(t *testing.T, s *service) (total int) {
	t.Helper()
	pub := func(publisher, name string, body []byte) {
		tok := token(t, s, publisher)
		if r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/"+name+"/versions/1.0.0", tok, body); r.status != http.StatusCreated {
			t.Fatalf("publish %s: %d %s", name, r.status, r.body)
		}
	}
	pub("example.com", "example-functions", exampleCatalog(t))
	pub("example.com", "team-a", catalogtest.Catalog(catalogtest.Options{Name: "team-a", Functions: 30, Group: "team-a.example.com"}))
	pub("acme.example", "acme-tools", catalogtest.Catalog(catalogtest.Options{Name: "acme-tools", Functions: 30, Group: "fn.acme.example", Publisher: "acme.example"}))
	return 8 + 30 + 30
}

// chromium finds Debian's Chromium, or skips (fails in CI) with how to install it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "Chromium", "install it (Debian: apt-get install -y chromium) to run the website tests")
	return ""
}

// browserTab starts a headless Chromium for the test and returns a context for one tab in it.
func browserTab(t *testing.T, path string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no deadline
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return ctx
}

// run runs steps with a deadline, so that a page that never loads fails the test instead of
// hanging it.
func run(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// navigate loads a page and returns its HTTP status.
func navigate(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) int64 {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(tctx, steps...)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status
}

const (
	jsCount  = `document.querySelector("[data-result-count]").textContent.trim()`
	jsTitles = `Array.from(document.querySelectorAll(".card-title a")).map(a => a.getAttribute("href"))`
)

func countOf(t *testing.T, heading string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.Fields(heading)[0])
	if err != nil {
		t.Fatalf("heading %q does not start with a count", heading)
	}
	return n
}

func TestWebsite(t *testing.T) {
	path := chromium(t)
	s := startService(t, storetest.NewDatabase(t))
	total := seedWebsite(t, s)
	ctx := browserTab(t, path)
	origin, _ := url.Parse(s.url)

	// Every request the pages make, and every console message, from here to the end.
	var (
		mu       sync.Mutex
		requests []string
		console  []chromedp.ConsoleMessage
	)
	reqs := chromedp.Events(ctx, network.RequestWillBeSent)
	msgs := chromedp.Console(ctx)
	go func() {
		for ev, err := range reqs {
			if err != nil {
				return
			}
			mu.Lock()
			requests = append(requests, ev.Request.URL)
			mu.Unlock()
		}
	}()
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m)
			mu.Unlock()
		}
	}()

	shots := t.ArtifactDir()
	t.Logf("screenshots: %s (kept with go test -artifacts -outputdir DIR)", shots)
	screenshot := func(t *testing.T, name string) {
		t.Helper()
		for _, width := range []int64{1280, 390} {
			var opts []chromedp.EmulateViewportOption
			if width < 600 {
				opts = append(opts, chromedp.EmulateMobile)
			}
			run(t, ctx, chromedp.EmulateViewport(width, 900, opts...))
			if width < 600 {
				// the page itself must not scroll sideways; wide tables scroll in their own box
				if w := eval[[]int](t, ctx, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`); w[0] > w[1] {
					t.Errorf("%s at %d px: the page is %d px wide and scrolls sideways", name, width, w[0])
				}
			}
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(shots, fmt.Sprintf("%s-%d.png", name, width))
			if err := os.WriteFile(file, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(t, ctx, chromedp.EmulateViewport(1280, 900))
	}

	t.Run("home and keyboard", func(t *testing.T) {
		if st := navigate(t, ctx, chromedp.Navigate(s.url+"/")); st != 200 {
			t.Fatalf("status %d", st)
		}
		if got := eval[string](t, ctx, jsCount); got != fmt.Sprintf("%d functions", total) {
			t.Errorf("heading %q, want %d functions", got, total)
		}
		// the first Tab reaches the skip link, visibly; Enter moves to the content
		run(t, ctx, chromedp.KeyEvent(kb.Tab))
		focus := eval[[]string](t, ctx, `[document.activeElement.className, getComputedStyle(document.activeElement).outlineStyle, String(document.activeElement.getBoundingClientRect().top >= 0)]`)
		if focus[0] != "skip-link" || focus[1] == "none" || focus[2] != "true" {
			t.Errorf("first Tab: focus on %q, outline %q, on screen %s; want the skip link, outlined", focus[0], focus[1], focus[2])
		}
		run(t, ctx, chromedp.KeyEvent(kb.Enter))
		if got := eval[string](t, ctx, `document.activeElement.id`); got != "main" {
			t.Errorf("after the skip link, focus is on %q, want main", got)
		}
		screenshot(t, "home")
	})

	t.Run("search narrows the results", func(t *testing.T) {
		navigate(t, ctx, chromedp.Navigate(s.url+"/"))
		run(t, ctx, chromedp.SendKeys(chromedp.ID("q"), "namespace"))
		// search as you type: the results change without a page load, and the address follows
		tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := chromedp.Run(tctx, chromedp.Poll[bool](jsCount+`.includes("namespace")`))
		cancel()
		if err != nil {
			t.Fatalf("the results did not follow the typing: %v", err)
		}
		n := countOf(t, eval[string](t, ctx, jsCount))
		if n == 0 || n >= total {
			t.Errorf("%d results for namespace, want between 1 and %d", n, total-1)
		}
		cards := eval[[]string](t, ctx, `Array.from(document.querySelectorAll(".card")).map(c => c.textContent.toLowerCase())`)
		if len(cards) != min(n, 20) {
			t.Errorf("%d cards for %d results", len(cards), n)
		}
		for _, c := range cards {
			if !strings.Contains(c, "namespace") {
				t.Errorf("a result does not mention namespace: %.80s", strings.Join(strings.Fields(c), " "))
			}
		}
		if loc := eval[string](t, ctx, `location.search`); loc != "?q=namespace" {
			t.Errorf("address %q, want ?q=namespace", loc)
		}
		// the form also works as a plain form: submitting loads the same search
		if st := navigate(t, ctx, chromedp.SendKeys(chromedp.ID("q"), kb.Enter)); st != 200 {
			t.Errorf("submit: %d", st)
		}
		if got := countOf(t, eval[string](t, ctx, jsCount)); got != n {
			t.Errorf("submitted search: %d results, typed search %d", got, n)
		}
		screenshot(t, "search")

		// an empty result helps: without the filter, popular tags, how to publish
		navigate(t, ctx, chromedp.Navigate(s.url+"/?q=nosuchword&runtime=exec"))
		help := eval[string](t, ctx, `document.querySelector(".empty").textContent`)
		for _, w := range []string{"Nothing matches “nosuchword” with these filters", "without the filters", "Popular tags", "Publish it"} {
			if !strings.Contains(help, w) {
				t.Errorf("the empty result lacks %q", w)
			}
		}
		screenshot(t, "empty")
	})

	t.Run("a facet filters the results", func(t *testing.T) {
		navigate(t, ctx, chromedp.Navigate(s.url+"/"))
		want := countOf(t, eval[string](t, ctx, `document.querySelector('#facet-runtime + ul a[href="/?runtime=exec"] .count').textContent`))
		navigate(t, ctx, chromedp.Click(chromedp.CSS(`#facet-runtime + ul a[href="/?runtime=exec"]`)))
		if got := countOf(t, eval[string](t, ctx, jsCount)); got != want || got == 0 || got >= total {
			t.Errorf("exec filter: %d results, the facet said %d (of %d)", got, want, total)
		}
		if bad := eval[int](t, ctx, `Array.from(document.querySelectorAll(".card")).filter(c => !c.querySelector(".rt-exec")).length`); bad != 0 {
			t.Errorf("%d results without the exec runtime", bad)
		}
		// the active facet removes its filter
		navigate(t, ctx, chromedp.Click(chromedp.CSS(`#facet-runtime + ul a.active`)))
		if got := countOf(t, eval[string](t, ctx, jsCount)); got != total {
			t.Errorf("after removing the filter: %d results, want %d", got, total)
		}
	})

	t.Run("pagination", func(t *testing.T) {
		navigate(t, ctx, chromedp.Navigate(s.url+"/"))
		var pages [][]string
		seen := map[string]bool{}
		for i := 1; ; i++ {
			if got := eval[string](t, ctx, `document.querySelector(".page-of").textContent`); got != fmt.Sprintf("Page %d of 4", i) {
				t.Fatalf("page %d says %q", i, got)
			}
			titles := eval[[]string](t, ctx, jsTitles)
			for _, ti := range titles {
				if seen[ti] {
					t.Errorf("%s is on two pages", ti)
				}
				seen[ti] = true
			}
			pages = append(pages, titles)
			if !eval[bool](t, ctx, `!!document.querySelector('a[rel="next"]')`) {
				break
			}
			navigate(t, ctx, chromedp.Click(chromedp.CSS(`a[rel="next"]`)))
		}
		if len(seen) != total || len(pages) != 4 {
			t.Errorf("%d functions on %d pages, want %d on 4", len(seen), len(pages), total)
		}
		navigate(t, ctx, chromedp.Click(chromedp.CSS(`a[rel="prev"]`)))
		if got := eval[[]string](t, ctx, jsTitles); !slices.Equal(got, pages[2]) {
			t.Errorf("Previous from page 4 shows %v, want page 3 %v", got, pages[2])
		}
	})

	fnPage := s.url + "/functions/fn.example.com/SetNamespace"
	t.Run("function page", func(t *testing.T) {
		if st := navigate(t, ctx, chromedp.Navigate(fnPage)); st != 200 {
			t.Fatalf("status %d", st)
		}
		fields := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#schema-table tbody th .field-path")).map(c => c.textContent)`)
		for _, f := range []string{"namespace", "exclude", "exclude[].kind", "exclude[].name", "updateReferences"} {
			if !slices.Contains(fields, f) {
				t.Errorf("schema table fields %v lack %s", fields, f)
			}
		}
		row := eval[string](t, ctx, `Array.from(document.querySelectorAll("#schema-table tbody tr")).find(tr => tr.querySelector(".field-path").textContent === "namespace").textContent`)
		for _, w := range []string{"string", "required", "The namespace every namespaced resource is moved into."} {
			if !strings.Contains(row, w) {
				t.Errorf("the namespace row %q lacks %q", strings.Join(strings.Fields(row), " "), w)
			}
		}
		digest := "registry.example.com/krm-functions/set-namespace:v1.3.0@sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120"
		if got := eval[string](t, ctx, `document.getElementById("pinned-image").textContent`); got != digest {
			t.Errorf("pinned image %q, want %q", got, digest)
		}
		// the fn.yaml snippet offers no value its schema refuses: a required string without a
		// default is named in a comment to fill in, not written as ""
		if got := eval[string](t, ctx, `document.getElementById("snippet-fn-config").textContent`); strings.Contains(got, `""`) || !strings.Contains(got, "# namespace: (required string, fill in)") {
			t.Errorf("fn.yaml snippet:\n%s", got)
		}
		screenshot(t, "function")
		// the version selector applies itself
		navigate(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("version"); s.value = "v1beta1"; s.dispatchEvent(new Event("change")); })()`))
		if got := eval[string](t, ctx, `location.search + " " + document.getElementById("pinned-image").textContent`); !strings.HasPrefix(got, "?version=v1beta1 registry.example.com/krm-functions/set-namespace:v0.9.2@sha256:") {
			t.Errorf("after choosing v1beta1: %q", got)
		}
	})

	t.Run("a copy button copies the snippet", func(t *testing.T) {
		navigate(t, ctx, chromedp.Navigate(fnPage))
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
				Permission: &browser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true}, Setting: browser.PermissionSettingGranted, Origin: s.url,
			}); err != nil {
				t.Fatalf("grant %s: %v", name, err)
			}
		}
		if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		snippet := eval[string](t, ctx, `document.getElementById("snippet-fn-run").textContent`)
		catalogURL := s.url + "/catalogs/example-functions/catalog.yaml"
		if !strings.Contains(snippet, "--catalog "+catalogURL) || !strings.Contains(snippet, "--trusted-catalog "+catalogURL) {
			t.Errorf("the fn run snippet does not name this server's catalog:\n%s", snippet)
		}
		run(t, ctx, chromedp.Click(chromedp.CSS(`button[data-copy="snippet-fn-run"]`)))
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := chromedp.Run(tctx, chromedp.Poll[bool](`document.querySelector('button[data-copy="snippet-fn-run"]').classList.contains("copied")`))
		cancel()
		if err != nil {
			t.Fatalf("the button did not report the copy: %v", err)
		}
		if got := eval[string](t, ctx, `navigator.clipboard.readText()`, chromedp.EvalAwaitPromise); got != snippet {
			t.Errorf("clipboard holds %q, want the snippet %q", got, snippet)
		}
	})

	t.Run("at 390 px", func(t *testing.T) {
		run(t, ctx, chromedp.EmulateViewport(390, 900, chromedp.EmulateMobile))
		defer run(t, ctx, chromedp.EmulateViewport(1280, 900))
		// each element ends inside the viewport and hides nothing behind a sideways scroll
		const jsOverflow = `((sels) => sels.map(sel => { const e = document.querySelector(sel); if (!e) return sel + ": missing";
			const r = e.getBoundingClientRect(), vw = document.documentElement.clientWidth;
			return (r.right > vw + 0.5 || e.scrollWidth > e.clientWidth + 1) ? sel + ": right " + r.right + " of " + vw + ", scrollWidth " + e.scrollWidth + " of " + e.clientWidth : ""; }).filter(Boolean))`
		for _, page := range []struct {
			url  string
			sels []string
		}{
			{fnPage, []string{"#schema-table", "#config-title + .section-intro + .table-scroll", "#snippet-kptfile", "#pinned-image", ".fn-main", ".fn-side"}},
			{s.url + "/catalogs/example-functions", []string{"#curl-latest", "#curl-pinned", "#resolve-cmd", ".fn-main"}},
		} {
			navigate(t, ctx, chromedp.Navigate(page.url))
			if bad := eval[[]string](t, ctx, jsOverflow+"("+jsArray(page.sels)+")"); len(bad) > 0 {
				t.Errorf("%s at 390 px overflows:\n%s", page.url, strings.Join(bad, "\n"))
			}
		}
		navigate(t, ctx, chromedp.Navigate(fnPage))
		// Runtime and Configuration come before the facts about the function
		if order := eval[[]float64](t, ctx, `["#runtime-title", "#config-title", ".fn-side"].map(s => document.querySelector(s).getBoundingClientRect().top)`); !(order[0] < order[1] && order[1] < order[2]) {
			t.Errorf("tops of Runtime, Configuration and the facts: %v, want in that order", order)
		}
		// the stacked table still names each value
		if got := eval[string](t, ctx, `getComputedStyle(document.querySelector("#schema-table td[data-label=Type]"), "::before").content`); got != `"Type: "` {
			t.Errorf("a stacked schema value is labelled %s", got)
		}

		// the executables stack too: no sideways scroll, and a digest or URL takes at most three
		// lines of the page's width, broken at the line's end or between a URL's parts
		navigate(t, ctx, chromedp.Navigate(s.url+"/functions/fn.example.com/ApplySetters"))
		if bad := eval[[]string](t, ctx, jsOverflow+"("+jsArray([]string{"table.platforms", ".table-scroll:has(table.platforms)"})+")"); len(bad) > 0 {
			t.Errorf("the executables at 390 px overflow:\n%s", strings.Join(bad, "\n"))
		}
		const jsLines = `Array.from(document.querySelectorAll("table.platforms td .hash, table.platforms td.break a")).map(e => {
			const cs = getComputedStyle(e); return [e.textContent.length, Math.round(e.getBoundingClientRect().height / parseFloat(cs.lineHeight)), cs.wordBreak]; })`
		cells := eval[[][]any](t, ctx, jsLines)
		if len(cells) != 6 {
			t.Fatalf("%d digests and URLs in the executables table, want 6", len(cells))
		}
		for _, c := range cells {
			if lines, _ := c[1].(float64); lines > 3 || c[2] == "break-all" {
				t.Errorf("a value of %v characters takes %v lines (word-break %v), want at most 3 and no break-all", c[0], c[1], c[2])
			}
		}
		if got := eval[int](t, ctx, `document.querySelectorAll("table.platforms td.break a wbr").length`); got == 0 {
			t.Error("the download URLs have no break opportunities between their parts")
		}
	})

	t.Run("catalogs page", func(t *testing.T) {
		if st := navigate(t, ctx, chromedp.Navigate(s.url+"/catalogs")); st != 200 {
			t.Fatalf("catalogs: %d", st)
		}
		// kustomize and kpt do not fetch catalogs: the page says what does
		if got := eval[string](t, ctx, `document.querySelector(".page-head .lead").textContent`); strings.Contains(got, "kustomize, kpt and krm-catalog fetch") || !strings.Contains(got, "neither fetches a catalog itself") {
			t.Errorf("catalogs page lead %q", got)
		}
	})

	t.Run("catalog and publisher pages", func(t *testing.T) {
		if st := navigate(t, ctx, chromedp.Navigate(s.url+"/catalogs/example-functions")); st != 200 {
			t.Fatalf("catalog: %d", st)
		}
		if got := eval[string](t, ctx, `document.getElementById("curl-latest").textContent`); got != "curl -fsSL "+s.url+"/catalogs/example-functions/catalog.yaml" {
			t.Errorf("curl command %q", got)
		}
		screenshot(t, "catalog")
		if st := navigate(t, ctx, chromedp.Click(chromedp.CSS(`.lead a[href="/publishers/example.com"]`))); st != 200 {
			t.Fatalf("publisher: %d", st)
		}
		if got := eval[string](t, ctx, `document.querySelector(".lead").textContent.trim()`); !strings.HasPrefix(got, "38 functions in 2 catalogs") {
			t.Errorf("publisher summary %q", got)
		}
		screenshot(t, "publisher")
	})

	t.Run("404 page", func(t *testing.T) {
		if st := navigate(t, ctx, chromedp.Navigate(s.url+"/functions/fn.example.com/NoSuchFunction")); st != 404 {
			t.Errorf("status %d, want 404", st)
		}
		if got := eval[string](t, ctx, `document.querySelector("h1").textContent + " | " + document.querySelector(".lead").textContent`); got != "Page not found | No function fn.example.com/NoSuchFunction." {
			t.Errorf("404 page says %q", got)
		}
		screenshot(t, "not-found")
	})

	t.Run("no request leaves the origin", func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		assets := 0
		for _, raw := range requests {
			u, err := url.Parse(raw)
			if err != nil {
				t.Errorf("request to %q: %v", raw, err)
				continue
			}
			switch {
			case u.Scheme == "data" || u.Scheme == "about":
				// no request leaves the browser
			case u.Scheme != origin.Scheme || u.Host != origin.Host:
				t.Errorf("a page requested %s, outside %s", raw, s.url)
			case strings.HasPrefix(u.Path, "/static/"):
				assets++
			}
		}
		if len(requests) < 20 || assets == 0 {
			t.Errorf("saw %d requests, %d of them for static assets: the recording does not work", len(requests), assets)
		}
		for _, m := range console {
			if strings.Contains(m.Text, "Content Security Policy") || m.IsException() {
				t.Errorf("console: %s (%s)", m.Text, m.URL)
			}
		}
	})
}

// jsArray is a JavaScript array of strings.
func jsArray(ss []string) string {
	b, _ := json.Marshal(ss)
	return string(b)
}
