package starlark

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/krm-catalog/krm-catalog/fn"
)

// A workbook read as xlsx.star's get_url reads one: kpt's starlark function opens it with excelize
// v1.4.1 (through qri-io/starlib's xlsx) and offers GetSheetMap and GetRows. This reads the parts
// those two use, the same way: the sheets the workbook lists with the number of the part
// (xl/worksheets/sheetN.xml) each relationship names, and each sheet's rows as strings: shared,
// inline or stored values, with excelize's rendering of the built-in number formats (dates,
// percentages, fixed decimals) applied. Parts that are not well-formed read as empty, as excelize
// reads them; where excelize crashes (a cell without a reference, a shared string or style that
// does not exist) this returns an error.
type workbook struct {
	sheets []workbookSheet   // by index
	parts  map[string]string // trimmed sheet name -> its part
	files  map[string][]byte
	shared []sharedString
	numFmt []int // number format of each cell style
}

type workbookSheet struct {
	index int
	name  string
}

type sharedString struct {
	T string `xml:"t"`
	R []struct {
		T string `xml:"t"`
	} `xml:"r"`
}

// readWorkbook reads an xlsx archive; every part, and all of them together, is bounded by the
// ResourceList size limit.
func readWorkbook(data []byte) (*workbook, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	wb := &workbook{files: map[string][]byte{}, parts: map[string]string{}}
	total := 0
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(rc, int64(fn.MaxResourceListBytes-total)+1))
		rc.Close()
		if err != nil {
			return nil, err
		}
		if total += len(b); total > fn.MaxResourceListBytes {
			return nil, errTooLarge
		}
		wb.files[f.Name] = b
	}
	var book struct {
		XMLName xml.Name `xml:"http://schemas.openxmlformats.org/spreadsheetml/2006/main workbook"`
		Sheets  []struct {
			Name string `xml:"name,attr"`
			ID   string `xml:"http://schemas.openxmlformats.org/officeDocument/2006/relationships id,attr"`
		} `xml:"sheets>sheet"`
	}
	_ = xml.Unmarshal(wb.part("xl/workbook.xml"), &book)
	var rels struct {
		XMLName xml.Name `xml:"http://schemas.openxmlformats.org/package/2006/relationships Relationships"`
		Rels    []struct {
			ID     string `xml:"Id,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	_ = xml.Unmarshal(wb.part("xl/_rels/workbook.xml.rels"), &rels)
	byIndex := map[int]string{}
	for _, s := range book.Sheets {
		for _, r := range rels.Rels {
			if _, n, ok := strings.Cut(r.Target, "worksheets/sheet"); ok && r.ID == s.ID {
				byIndex[atoi(strings.TrimSuffix(n, ".xml"))] = s.Name
			}
		}
	}
	for i, name := range byIndex {
		wb.sheets = append(wb.sheets, workbookSheet{i, name})
		wb.parts[name] = "xl/worksheets/sheet" + strconv.Itoa(i) + ".xml"
	}
	sort.Slice(wb.sheets, func(a, b int) bool { return wb.sheets[a].index < wb.sheets[b].index })
	var sst struct {
		XMLName xml.Name       `xml:"http://schemas.openxmlformats.org/spreadsheetml/2006/main sst"`
		SI      []sharedString `xml:"si"`
	}
	ss := wb.part("xl/sharedStrings.xml")
	if len(ss) == 0 {
		ss = wb.part("xl/SharedStrings.xml")
	}
	_ = xml.Unmarshal(ss, &sst)
	wb.shared = sst.SI
	var styles struct {
		XMLName xml.Name `xml:"http://schemas.openxmlformats.org/spreadsheetml/2006/main styleSheet"`
		Xf      []struct {
			NumFmtID int `xml:"numFmtId,attr"`
		} `xml:"cellXfs>xf"`
	}
	_ = xml.Unmarshal(wb.part("xl/styles.xml"), &styles)
	for _, xf := range styles.Xf {
		wb.numFmt = append(wb.numFmt, xf.NumFmtID)
	}
	return wb, nil
}

// part is a part of the archive with the strict namespaces read as the transitional ones, as
// excelize reads it.
func (wb *workbook) part(name string) []byte {
	b := wb.files[name]
	for strict, transitional := range map[string]string{
		"http://purl.oclc.org/ooxml/officeDocument/relationships": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
		"http://purl.oclc.org/ooxml/spreadsheetml/main":           "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
	} {
		b = bytes.ReplaceAll(b, []byte(strict), []byte(transitional))
	}
	return b
}

// rows is excelize's GetRows: the sheet's rows up to the last one holding a value, each as wide as
// the sheet's widest; a sheet the workbook does not list has none.
func (wb *workbook) rows(sheet string) ([][]string, error) {
	part, ok := wb.parts[trimSheetName(sheet)]
	if !ok {
		return [][]string{}, nil
	}
	var ws struct {
		XMLName xml.Name `xml:"http://schemas.openxmlformats.org/spreadsheetml/2006/main worksheet"`
		Rows    []struct {
			R     int `xml:"r,attr"`
			Cells []struct {
				R  string `xml:"r,attr"`
				S  int    `xml:"s,attr"`
				T  string `xml:"t,attr"`
				V  string `xml:"v"`
				IS *struct {
					T string `xml:"t"`
				} `xml:"is"`
			} `xml:"c"`
		} `xml:"sheetData>row"`
	}
	_ = xml.Unmarshal(wb.part(part), &ws)
	// excelize first makes the rows continuous (checkSheet): as many as the last one's number, or
	// as there are, whichever is more, each row where its number puts it
	n := len(ws.Rows)
	if n > 0 && ws.Rows[n-1].R >= n {
		n = ws.Rows[n-1].R
	}
	at := map[int]int{}
	for i, r := range ws.Rows {
		if r.R >= 1 && r.R <= n {
			at[r.R] = i
		}
	}
	cols := 0
	for _, ri := range at {
		for _, c := range ws.Rows[ri].Cells {
			cols = max(cols, columnNumber(c.R)+1)
		}
	}
	if n > maxSheetRows || cols > maxSheetColumns || n*cols > maxSheetCells {
		return nil, fmt.Errorf("get_rows: sheet %q is %d rows by %d columns, more than %d cells", sheet, n, cols, maxSheetCells)
	}
	out := make([][]string, n)
	for i := range out {
		out[i] = make([]string, cols)
	}
	last := 0
	for i := 0; i < n; i++ {
		ri, ok := at[i+1]
		if !ok {
			continue
		}
		for _, c := range ws.Rows[ri].Cells {
			col := columnNumber(c.R)
			if col < 0 {
				return nil, fmt.Errorf("get_rows: sheet %q: row %d has a cell without a reference", sheet, i+1)
			}
			var v string
			switch c.T {
			case "s":
				idx := atoi(c.V)
				if idx < 0 || idx >= len(wb.shared) {
					return nil, fmt.Errorf("get_rows: sheet %q: cell %s names shared string %d, and there are %d", sheet, c.R, idx, len(wb.shared))
				}
				si := wb.shared[idx]
				if len(si.R) > 0 {
					for _, r := range si.R {
						v += r.T
					}
				} else {
					v = wb.formatted(c.S, si.T)
				}
			case "inlineStr":
				if c.IS != nil {
					v = wb.formatted(c.S, c.IS.T)
				} else {
					v = wb.formatted(c.S, "")
				}
			default:
				v = wb.formatted(c.S, c.V)
			}
			out[i][col] = v
			if v != "" {
				last = i + 1
			}
		}
	}
	return out[:last], nil
}

// A sheet's rows are built whole, as excelize builds them: bounded by Excel's own limits, and in
// cells (64 MiB of empty strings), where excelize would try whatever a file claims.
const (
	maxSheetRows    = 1 << 20
	maxSheetColumns = 1 << 14
	maxSheetCells   = 1 << 22
)

// columnNumber is the 0-based column of a cell reference (the letters of "AB12"), -1 for none;
// past Excel's last column, maxSheetColumns.
func columnNumber(ref string) int {
	sum, weight := 0, 1
	letters := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' {
			return r
		}
		return -1
	}, ref)
	if len(letters) > 3 {
		return maxSheetColumns
	}
	for i := len(letters) - 1; i >= 0; i-- {
		ch := int(letters[i])
		if ch >= 'a' {
			ch -= 32
		}
		sum += (ch - 'A' + 1) * weight
		weight *= 26
	}
	return sum - 1
}

// trimSheetName is excelize's: the characters a sheet name may not hold dropped, 31 runes at most.
func trimSheetName(name string) string {
	name = strings.Map(func(r rune) rune {
		if strings.ContainsRune(`:\/?*[]`, r) {
			return -1
		}
		return r
	}, name)
	if utf8.RuneCountInString(name) > 31 {
		name = string([]rune(name)[:31])
	}
	return name
}

// formatted is excelize's formattedValue: a value in the cell style's built-in number format, when
// excelize renders that format; otherwise as stored.
func (wb *workbook) formatted(style int, v string) string {
	if style <= 0 || style >= len(wb.numFmt) {
		return v
	}
	id := wb.numFmt[style]
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return v
	}
	switch id {
	case 1, 3:
		return fmt.Sprintf("%d", int(f))
	case 2, 4:
		return fmt.Sprintf("%.2f", f)
	case 9:
		return fmt.Sprintf("%d%%", int(f*100))
	case 10:
		return fmt.Sprintf("%.2f%%", f*100)
	case 11, 48:
		return fmt.Sprintf("%.e", f)
	case 37, 38:
		if f < 0 {
			return fmt.Sprintf("(%d)", int(math.Abs(f)))
		}
		return fmt.Sprintf("%d", int(f))
	case 39, 40:
		if f < 0 {
			return fmt.Sprintf("(%.2f)", f)
		}
		return fmt.Sprintf("%.2f", f)
	case 14, 15, 16, 17, 18, 19, 20, 21, 22, 45, 46, 47:
		return excelTimeFormat(f, dateFormats[id])
	}
	return v
}

// dateFormats are the built-in date and time formats excelize renders.
var dateFormats = map[int]string{
	14: "mm-dd-yy", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy", 18: "h:mm am/pm", 19: "h:mm:ss am/pm",
	20: "h:mm", 21: "h:mm:ss", 22: "m/d/yy h:mm", 45: "mm:ss", 46: "[h]:mm:ss", 47: "mmss.0",
}

// excelTimeFormat is excelize v1.4.1's parseTime: the Excel format turned into a Go layout by its
// replacements, in its order.
func excelTimeFormat(f float64, format string) string {
	val := timeFromExcelTime(f)
	if strings.Contains(format, "am/pm") || strings.Contains(format, "AM/PM") || strings.Contains(format, "a/p") || strings.Contains(format, "A/P") {
		format = strings.Replace(format, "hh", "03", 1)
		format = strings.Replace(format, "h", "3", 1)
	} else {
		format = strings.Replace(format, "hh", "15", 1)
		format = strings.Replace(format, "h", "15", 1)
	}
	for _, r := range [][2]string{
		{"yyyy", "2006"}, {"yy", "06"}, {"mmmm", "%%%%"}, {"dddd", "&&&&"}, {"dd", "02"}, {"d", "2"},
		{"mmm", "Jan"}, {"mmss", "0405"}, {"ss", "05"}, {"mm:", "04:"}, {":mm", ":04"}, {"mm", "01"},
		{"am/pm", "pm"}, {"m/", "1/"}, {"%%%%", "January"}, {"&&&&", "Monday"},
	} {
		format = strings.Replace(format, r[0], r[1], 1)
	}
	if val.Hour() < 1 {
		format = strings.Replace(format, "]:", "]", 1)
		format = strings.Replace(format, "[03]", "", 1)
		format = strings.Replace(format, "[3]", "", 1)
		format = strings.Replace(format, "[15]", "", 1)
	} else {
		format = strings.Replace(format, "[3]", "3", 1)
		format = strings.Replace(format, "[15]", "15", 1)
	}
	return val.Format(format)
}

// timeFromExcelTime is excelize's, for the 1900 date system: Julian dates up to 1 March 1900,
// Gregorian after.
func timeFromExcelTime(excelTime float64) time.Time {
	const mdd int64 = 106750 // the days a time.Duration holds, about 290 years
	intPart := int64(excelTime)
	if intPart <= 61 {
		return julianDateToGregorianTime(2400000.5, excelTime+15018.0)
	}
	floatPart := excelTime - float64(intPart)
	var dayNanoSeconds float64 = 24 * 60 * 60 * 1000 * 1000 * 1000
	date := time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)
	for intPart > mdd {
		date = date.Add(time.Duration(mdd) * time.Hour * 24)
		intPart -= mdd
	}
	return date.Add(time.Duration(intPart) * time.Hour * 24).Add(time.Duration(dayNanoSeconds * floatPart))
}

func julianDateToGregorianTime(part1, part2 float64) time.Time {
	part1I, part1F := math.Modf(part1)
	part2I, part2F := math.Modf(part2)
	julianDays := part1I + part2I
	julianFraction := part1F + part2F
	switch {
	case -0.5 < julianFraction && julianFraction < 0.5:
		julianFraction += 0.5
	case julianFraction >= 0.5:
		julianDays++
		julianFraction -= 0.5
	case julianFraction <= -0.5:
		julianDays--
		julianFraction += 1.5
	}
	// Fliegel and Van Flandern
	l := int(julianDays) + 68569
	n := (4 * l) / 146097
	l -= (146097*n + 3) / 4
	i := (4000 * (l + 1)) / 1461001
	l = l - (1461*i)/4 + 31
	j := (80 * l) / 2447
	day := l - (2447*j)/80
	l = j / 11
	month := j + 2 - (12 * l)
	year := 100*(n-49) + i + l
	// the fraction of the day, to the microsecond
	frac := int64(24*60*60*1e9*julianFraction + 1e3/2)
	nanoseconds := int((frac%1e9)/1e3) * 1e3
	frac /= 1e9
	seconds := int(frac % 60)
	frac /= 60
	minutes := int(frac % 60)
	hours := int(frac / 60)
	return time.Date(year, time.Month(month), day, hours, minutes, seconds, nanoseconds, time.UTC)
}
