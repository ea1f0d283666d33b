#pragma once
// The raw text of a config file checked before yaml-cpp reads it, for the YAML that yaml-cpp
// accepts but reads as something else than what the user wrote. A config is a mapping of
// one-line values (sections, then 'key: value' lines, or flow mappings such as
// 'train: {steps: 5}'; the corpus keys also take a sequence of paths, '[a, b]' or one
// '- path' line each), so the check refuses, naming the line and the key:
//   - a quoted scalar that does not close on the line where it opens: yaml-cpp reads an unclosed
//     quote to the end of the file, swallowing every key after it ('run_dir: "runs/a' then
//     'steps: 5' gave run_dir 'runs/a steps: 5 '); a quote closed on a later line is valid YAML
//     (a multi-line scalar), refused all the same: no value of ours spans lines;
//   - a tab in the indentation of a block line (YAML indents with spaces; yaml-cpp says only
//     "illegal map value");
//   - a line that YAML joins to the line before it (a multi-line plain scalar): a line indented
//     under a line that has a value ('corpus: my' then '   text.txt' read as 'my text.txt'), and
//     a line with no ':' after its key ('steps 5', which swallows the next line's key);
//   - a plain scalar inside a flow mapping that continues on the next line;
//   - a block scalar ('|' or '>'), whose value is several lines.
// Accepted: a value on the line after its 'key:', indented deeper (one line of it).
#include <string>
#include <string_view>

namespace rfa {

// Throws Error ("FILE:LINE: ...") for the cases above; returns the text for yaml-cpp: the same,
// with lines holding only blanks (or blanks and a comment) emptied, since yaml-cpp refuses a tab
// there ("illegal tab when looking for indentation") where it means nothing.
std::string config_yaml_precheck(std::string_view text, const std::string& origin);

}  // namespace rfa
