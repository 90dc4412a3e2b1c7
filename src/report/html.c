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
    ".logtoggle{float:right;font-size:12px}.hover{font-size:12px;color:#555;margin-left:8px}"
    "rect.area{fill:#fff;stroke:#999}rect.lane{fill:#fafafa;stroke-width:0.5}line.grid{stroke:#eee}"
    "text.tick{font-size:11px;fill:#444}text.axis-label{font-size:12px;fill:#222}text.val{font-size:11px;fill:#333}"
    "path.series{fill:none;stroke-width:1.5}"
    "table{border-collapse:collapse;font-size:12px;margin:4px 0}td,th{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right}"
    ".note{background:#fff3cd;border:1px solid #e0c36a;padding:6px 10px;margin:6px 0}"
    ".errors{background:#f8d7da;border:1px solid #d9534f;padding:6px;white-space:pre-wrap}"
    ".src-default{color:#888}.scroll{max-height:420px;overflow:auto}"
    "@media print{.logtoggle,.hover{display:none}.scroll{max-height:none;overflow:visible}body{max-width:none}"
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
                 /* hover: the nearest point of every curve under the pointer, in data units */
                 "document.querySelectorAll('svg.chart').forEach(function(svg){"
                 "var out=svg.closest('figure').querySelector('.hover');if(!out)return;"
                 "svg.addEventListener('mousemove',function(ev){"
                 "var g=[].filter.call(svg.querySelectorAll('g[data-f]'),function(x){return x.style.display!='none';})[0];"
                 "if(!g)return;var f=g.getAttribute('data-f').split(' ').map(Number),r=svg.getBoundingClientRect();"
                 "var px=(ev.clientX-r.left)*svg.viewBox.baseVal.width/r.width,t=[],bx=null;"
                 "g.querySelectorAll('path.series').forEach(function(p){"
                 "if(!p.pts)p.pts=p.getAttribute('d').replace('h0.1','').slice(1).split('L').map(function(s){"
                 "return s.split(' ').map(Number);});var b=null;"
                 "p.pts.forEach(function(q){if(!b||Math.abs(q[0]-px)<Math.abs(b[0]-px))b=q;});if(!b)return;"
                 "var y=f[2]+(f[7]-b[1])/(f[7]-f[6])*(f[3]-f[2]);if(f[9])y=Math.pow(10,y);"
                 "var x=f[0]+(b[0]-f[4])/(f[5]-f[4])*(f[1]-f[0]);if(f[8])x=Math.pow(10,x);if(bx===null)bx=x;"
                 "t.push((p.getAttribute('data-series')||'')+' '+Number(y.toPrecision(5)));});"
                 "out.textContent=bx===null?'':' at '+Number(bx.toPrecision(6))+': '+t.join(', ');});"
                 "svg.addEventListener('mouseleave',function(){out.textContent='';});});"
                 "document.body.setAttribute('data-rendered','1');</script>\n</body></html>\n");
}
