package console

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// assetFile is one embedded file as served.
type assetFile struct {
	body  []byte
	etag  string
	ctype string
}

// assets serves the embedded files (the console's script and style, and
// the vendored uPlot) with an ETag each; a browser revalidates them, so a
// new build is picked up at once.
type assets struct {
	files map[string]assetFile
}

func newAssets(fsys fs.FS) *assets {
	a := &assets{files: map[string]assetFile{}}
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "text/plain; charset=utf-8"
		}
		a.files["/"+p] = assetFile{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ctype}
		return nil
	})
	return a
}

// ServeHTTP serves one asset by its path under the assets folder.
func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, ok := a.files[r.URL.Path]
	if !ok || strings.Contains(r.URL.Path, "..") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", f.ctype)
	_, _ = w.Write(f.body)
}
