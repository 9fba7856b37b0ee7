//! A trace's TraceLens tables as one Excel workbook (`report summary
//! --xlsx`): a sheet per table, named and ordered as TraceLens names and
//! orders them, numbers as numbers.

use rust_xlsxwriter::{Format, Workbook, XlsxError};
use trace_summary::{Cell, Table};

/// The most characters Excel holds in a cell.
const MAX_TEXT: usize = 32_767;

/// The workbook of `sheets` (name, table), as the bytes of an `.xlsx`.
///
/// A NaN is an empty cell (as the CSV has it), an infinity the text `inf`
/// or `-inf`; a text longer than a cell holds (a long `kernel_details`
/// list) is cut to what it holds, ending in `...`.
pub(crate) fn workbook(sheets: &[(&str, &Table)]) -> Result<Vec<u8>, XlsxError> {
    let mut book = Workbook::new();
    let bold = Format::new().set_bold();
    for (name, table) in sheets {
        let sheet = book.add_worksheet();
        sheet.set_name(*name)?;
        for (c, h) in table.header.iter().enumerate() {
            sheet.write_string_with_format(0, column(c)?, h, &bold)?;
        }
        for (r, row) in table.rows.iter().enumerate() {
            let r = u32::try_from(r + 1).map_err(|_| XlsxError::RowColumnLimitError)?;
            for (c, cell) in row.iter().enumerate() {
                let c = column(c)?;
                match cell {
                    Cell::Int(i) => {
                        sheet.write_number(r, c, *i as f64)?;
                    }
                    Cell::Float(f) if f.is_finite() => {
                        sheet.write_number(r, c, *f)?;
                    }
                    Cell::Float(f) if f.is_nan() => {}
                    Cell::Float(f) => {
                        sheet.write_string(r, c, if *f > 0.0 { "inf" } else { "-inf" })?;
                    }
                    Cell::Str(s) => {
                        sheet.write_string(r, c, fitted(s))?;
                    }
                    Cell::Empty => {}
                }
            }
        }
    }
    book.save_to_buffer()
}

fn column(c: usize) -> Result<u16, XlsxError> {
    u16::try_from(c).map_err(|_| XlsxError::RowColumnLimitError)
}

/// `text`, cut to what a cell holds.
fn fitted(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().count() <= MAX_TEXT {
        return text.into();
    }
    let kept: String = text.chars().take(MAX_TEXT - 3).collect();
    format!("{kept}...").into()
}

#[cfg(test)]
mod tests {
    use super::fitted;

    #[test]
    fn a_text_longer_than_a_cell_is_cut_to_fit() {
        assert_eq!(fitted("short"), "short");
        let long = "µ".repeat(40_000);
        let cut = fitted(&long);
        assert_eq!(cut.chars().count(), 32_767);
        assert!(cut.ends_with("µ..."));
    }
}
