/* report/html: the page frame every report shares — head, CSS for screen
 * and print, and the inline scripts (see report/report.h). */
#include "report/report.h"

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:12px 20px;max-width:1600px;color:#222}"
    "h1{font-size:20px;margin:4px 0}h2{font-size:16px;margin:18px 0 6px;border-bottom:1px solid #ddd}"
    ".grid2{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:10px}"
    "figure.plot{margin:0;padding:6px;border:1px solid #e3e3e3;border-radius:4px;break-inside:avoid}"
    "figure.wide{grid-column:1/-1}"
    "figcaption{font-size:13px;margin-bottom:2px}svg.chart{width:100%;height:auto;display:block}"
    ".legend span{margin-left:10px;white-space:nowrap}.legend i{display:inline-block;width:10px;height:10px;"
    "margin-right:3px;vertical-align:middle}"
    ".logtoggle{float:right;font-size:12px}"
    "rect.area{fill:#fff;stroke:#999}rect.lane{fill:#fafafa;stroke-width:0.5}line.grid{stroke:#eee}"
    "text.tick{font-size:11px;fill:#444}text.axis-label{font-size:12px;fill:#222}text.val{font-size:11px;fill:#333}"
    "path.series{fill:none;stroke-width:1.5}"
    "table{border-collapse:collapse;font-size:12px;margin:4px 0}td,th{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right}"
    ".note{background:#fff3cd;border:1px solid #e0c36a;padding:6px 10px;margin:6px 0}"
    ".errors{background:#f8d7da;border:1px solid #d9534f;padding:6px;white-space:pre-wrap}"
    ".src-default{color:#888}.scroll{max-height:420px;overflow:auto}"
    "@media print{.logtoggle{display:none}.scroll{max-height:none;overflow:visible}body{max-width:none}"
    ".grid2{grid-template-columns:1fr 1fr}}";

void hp_rep_page_begin(hp_sbuf *b, const char *title) {
    hp_sb_put(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    hp_sb_html(b, title);
    hp_sb_printf(b, "</title><style>%s</style>"
                    "<script>window.addEventListener('error',function(e){var d=document.getElementById('errors');"
                    "if(d){d.hidden=false;d.textContent+='script error: '+e.message+'\\n';}});</script>"
                    "</head><body>\n<div id=\"errors\" class=\"errors\" hidden></div>\n",
                 css);
}

void hp_rep_page_end(hp_sbuf *b) {
    hp_sb_put(b, "<script>document.querySelectorAll('.logtoggle input').forEach(function(c){"
                 "c.addEventListener('change',function(){var f=c.closest('figure');"
                 "f.querySelector('.view-lin').style.display=c.checked?'none':'';"
                 "f.querySelector('.view-log').style.display=c.checked?'':'none';});});"
                 "document.body.setAttribute('data-rendered','1');</script>\n</body></html>\n");
}
