"""Markdown for the generated tables: summaries over runs and the README sections they fill."""
import os
import re
import statistics
from pathlib import Path
from typing import Dict, List, Sequence, Tuple


def summary(runs: Sequence[Dict], key: str) -> Tuple[float, float]:
    """Mean and sample standard deviation of ``run[key]`` over ``runs`` (0 for one run)."""
    values = [run[key] for run in runs]
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def mean_sd(runs: Sequence[Dict], key: str) -> str:
    """``0.720 ± 0.020``, or ``0.720`` where one run has no spread to show."""
    mean, spread = summary(runs, key)
    return f'{mean:.3f} ± {spread:.3f}' if len(runs) > 1 else f'{mean:.3f}'


def heading(title: str, *paragraphs: str) -> List[str]:
    """A report's first lines: ``# title``, then each paragraph, a blank line after each."""
    lines = [f'# {title}', '']
    for paragraph in paragraphs:
        lines += [paragraph, '']
    return lines


def markdown_table(header: Sequence[str], align: str, rows: Sequence[Sequence[str]]) -> List[str]:
    """A markdown table's lines; ``align`` has one letter per column, ``l`` or ``r``."""
    rule = ''.join('---|' if side == 'l' else '---:|' for side in align)
    return ['| ' + ' | '.join(header) + ' |', '|' + rule] + [
        '| ' + ' | '.join(cells) + ' |' for cells in rows]


def replace_section(readme: Path, text: str, start_marker: str, end_marker: str) -> None:
    """Put ``text`` between the marker lines of ``readme``, keeping everything around them.

    Raises:
        ValueError: the markers are missing or out of order.
    """
    content = Path(readme).read_text()
    start, end = content.find(start_marker), content.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f'{readme}: needs the lines {start_marker} and {end_marker} around '
                         'the table')
    head = content[:start + len(start_marker)]
    text = text if text.endswith('\n') else text + '\n'
    Path(readme).write_text(f'{head}\n{text}{content[end:]}')


def replace_titled_section(path: Path, title: str, text: str, header: str) -> None:
    """Put ``text`` (which starts with the ``## title`` line) in place of the file's section
    of that title, where it stands, or append it; the file's other sections are kept, in their
    order. A new file starts with ``header``."""
    content = path.read_text() if path.is_file() else header
    head, *sections = content.split('\n## ')
    mine = text[len('## '):]
    titled = [index for index, section in enumerate(sections)
              if section.split('\n', 1)[0] == title.lstrip('# ')]
    if titled:  # in the section's place: rerunning one benchmark of a page does not reorder it
        sections = [mine if index == titled[0] else section
                    for index, section in enumerate(sections) if index not in titled[1:]]
    else:
        sections.append(mine)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('\n## '.join(part.rstrip('\n') + '\n' for part in [head, *sections]))


def print_and_write(text: str, path: Path) -> None:
    """Show a benchmark's report and keep it in ``path`` (its folder created)."""
    print(text)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)


#: a markdown link's target that is a path relative to its page (not a URL, an anchor or a
#: path from the root)
RELATIVE_LINK = re.compile(r'\]\((?![a-z]+:|#|/)([^)\s]+)\)')


def rebased_links(lines: Sequence[str], written_for: Path, page_folder: Path) -> List[str]:
    """``lines`` written for a page in ``written_for`` (a family README's section, its configs
    linked by bare name) with every relative link pointing at the same file from a page in
    ``page_folder``: copied unchanged into a results page, the links resolved inside that page's
    folder, where no such file is."""
    def moved(match: re.Match) -> str:
        target = os.path.normpath(Path(written_for) / match.group(1))
        return f']({Path(os.path.relpath(target, page_folder)).as_posix()})'
    return [RELATIVE_LINK.sub(moved, line) for line in lines]
