/** The style every self-contained page shares (the job page, the fleet page): header, sections, tables. */
export const PAGE_CSS = `
body{font-family:Helvetica,Arial,sans-serif;margin:0;background:#f5f7fa;color:#1f2933}
header{background:#1f2933;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px;font-weight:600}
header .facts{margin-top:6px;font-size:13px;color:#cbd2d9}
header .facts span{margin-right:18px}
main{padding:16px 24px;max-width:1400px}
section{background:#fff;border:1px solid #e4e7eb;border-radius:6px;padding:12px 16px;margin-bottom:16px;overflow-x:auto}
h2{font-size:15px;margin:0 0 10px 0}
table{border-collapse:collapse;font-size:13px}
th,td{text-align:left;padding:4px 10px;border-bottom:1px solid #e4e7eb;vertical-align:top}
th{color:#616e7c;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
`;
