package starlark

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

// The geo module as kpt's starlark function has it: the want is what that function
// (krm-functions-catalog's functions/go/starlark, built from source) returned for this script,
// starlib's own test of the module and more.
func TestStarlarkGeoAsKpt(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile("testdata/geo.star")
	if err != nil {
		t.Fatal(err)
	}
	compareProbeWith(t, &Function{Script: string(script)}, kptGeoProbe, wholeFloatsAsInts)
}

// wholeFloatsAsInts reads a float of no fraction as an int: kpt's function writes the float 33.0
// as 33 (yaml.Marshal of a float64), which reads back as an int, where krm-catalog writes it
// tagged, !!float 33; the values are the same.
func wholeFloatsAsInts(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int(x)
		}
	case []any:
		for i := range x {
			x[i] = wholeFloatsAsInts(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = wholeFloatsAsInts(x[k])
		}
	}
	return v
}

const kptGeoProbe = `far: 3.1485906727262856e+06
geodesic: 31742.52939277697
geojson:
- Point
- -103.0078125
- 38.272688535980976
- Line
- 2.8284271247461903
- Polygon
- 4
- 20
- a
- - x
  - 1
- true
- null
- ufo_sightings: 100
- {}
line:
- 5.924428900898052
- 659188.2368030178
- 3
- '[(1.000000,2.000000) (2.000000,2.000000) (4.000000,6.500000) ]'
- Line
- 2
multi:
- multi polygon 2 polygons
- MultiPolygon
- true
- false
ok: true
p1:
- -44.34
- -44.34
- 33
- 33
- (-44.340000,33.000000)
- Point
- true
- false
planar: 1
poly:
- polygon 2 rings
- Polygon
- 2
- 7
within:
- false
- true
- false
- true
- true
- true
`

// Each call fails as in kpt's function, with its message; where that function crashes, or answers
// otherwise on purpose (docs/runtimes.md), the want says so.
func TestStarlarkGeoErrorsAsKpt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ call, kpt string }{
		{`geo.Point("a", 1)`, "invalid type 'string' expected int or float"},
		{`geo.Line(["x"])`, "invalid type 'string' to create line"},
		{`geo.Polygon([[[0, 0], [1, 1]]])`, "line 0 is not closed"},
		{`geo.Polygon([3])`, "invalid type for creating polygon: int"},
		{`geo.MultiPolygon([p1])`, "invalid type for creating MultiPolygon: Point"},
		{`geo.within(p1, p1)`, "within b value must be either a Polygon or Multipolygon. got: Point"},
		{`geo.within(poly, poly)`, "checking polygons-within-polygons is not yet supported"},
		{`geo.within(3, poly)`, "unrecognized type: int"},
		{`geo.intersects(p1, poly)`, "not finished: intersects"},
		{`p1.buffer(1)`, "not yet implemented: buffer"},
		{`p1.KNN(1)`, "not yet implemented: knn"},
		{`line.buffer(1)`, "not yet implemented: buffer"},
		{`p1.distance(3)`, "distance: for parameter p2: got int, want Point"},
		{`geo.parseGeoJSON(3)`, "parseGeoJSON: invalid argument type, expected string"},
		{`geo.parseGeoJSON('{"type": "Feature"}')`, "geojson: not a feature collection: type=Feature"},
		{`geo.parseGeoJSON('{"type": "FeatureCollection", "features": [{"type": "x"}]}')`, "geojson: not a feature: type=x"},
		{`geo.parseGeoJSON('{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "MultiPoint", "coordinates": [[1, 2]]}}]}')`, "unrecognized geoJSON type: MultiPoint"},
		{`geo.parseGeoJSON('{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "Nope"}}]}')`, "geojson: invalid geometry"},
		{`geo.parseGeoJSON('{"type": ')`, "unexpected end of JSON input"},
		{`geo.Point(1, 2) == geo.Point(1, 2)`, ""},
		{`geo.Polygon([])`, ""},
		// where kpt's function crashes ("index out of range") or answers for a line's first point
		// only (an error for a line of none), this one says what is wrong, or answers for every point
		{`geo.Line([[1]])`, "wrong number elements for point. expected 2, got: 1"},
		{`geo.within(geo.Line([]), poly)`, ""},
		{`geo.within(geo.Line([[0.5, 0.5], [5, 5]]), poly)`, ""},
		{`geo.parseGeoJSON('{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": null}]}')`, "geojson: a feature without a geometry"},
		{`geo.parseGeoJSON('{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "GeometryCollection"}}]}')`, "unrecognized geoJSON type: GeometryCollection"},
	} {
		script := "load(\"geo.star\", \"geo\")\np1 = geo.Point(-44.34, 33)\nline = geo.Line([[1, 2], [2, 2]])\npoly = geo.Polygon([[[0, 0], [0, 1], [1, 1], [0, 0]]])\nr = " + tc.call + "\n"
		out, err := (&Function{Script: script}).Run(context.Background(), list(t))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(out.Results) == 1 {
			got = out.Results[0].Message
		}
		if got != tc.kpt {
			t.Errorf("%s: %q, kpt's starlark function says %q", tc.call, got, tc.kpt)
		}
	}
}

func FuzzGeoParseGeoJSON(f *testing.F) {
	f.Add(`{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"a": [1, {"b": null}]}, "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [0, 1], [1, 1], [0, 0]]]}}]}`)
	f.Add(`{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "Point", "coordinates": [1]}}]}`)
	f.Add(`{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": null}]}`)
	f.Fuzz(func(t *testing.T, data string) {
		v, err := geoParseGeoJSON(nil, starlark.NewBuiltin("parseGeoJSON", geoParseGeoJSON), starlark.Tuple{starlark.String(data)}, nil)
		if err != nil {
			return
		}
		tup := v.(starlark.Tuple)
		geoms, props := tup[0].(*starlark.List), tup[1].(*starlark.List)
		if geoms.Len() != props.Len() {
			t.Fatalf("%d geometries, %d properties", geoms.Len(), props.Len())
		}
		for i := 0; i < geoms.Len(); i++ {
			if tp := geoms.Index(i).Type(); !strings.Contains("Point Line Polygon", tp) {
				t.Fatalf("geometry %d is a %s", i, tp)
			}
			// every value can be written back as YAML but the geometries
			if _, err := fromStarlark(props.Index(i), 0); err != nil {
				t.Fatalf("properties %d: %v", i, err)
			}
		}
	})
}
