/* report/html: the page frame every report shares — head, CSS for screen
 * and print, and the inline scripts (see report/pages.h): the log-scale
 * switches, the hover read-out (each layer's own value on stacked charts),
 * and the smoothing slider, which smooths the raw points a chart carries
 * (TensorBoard's debiased EMA) and redraws the smoothed curves decimated as
 * report/series does. The page is drawn in full without them. */
#include "report/pages.h"

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
    "path.series{fill:none;stroke-width:1.5}path.raw{stroke-opacity:.3}circle.raw{fill-opacity:.3}path.smooth{stroke-width:2}"
    "path.layer{fill-opacity:.75;stroke:none}path.top{stroke-width:1}"
    ".smoothing,.smooth-static{font-size:12px;margin-left:10px}.smoothing input{vertical-align:middle;width:110px}"
    ".note.warn{background:#ffe0cc;border-color:#d9822b}tr.units th{font-weight:normal;font-size:11px;color:#555}"
    "table{border-collapse:collapse;font-size:12px;margin:4px 0}td,th{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right}"
    ".note{background:#fff3cd;border:1px solid #e0c36a;padding:6px 10px;margin:6px 0}"
    ".errors{background:#f8d7da;border:1px solid #d9534f;padding:6px;white-space:pre-wrap}"
    ".src-default{color:#888}.scroll{max-height:420px;overflow:auto}"
    "@media print{.logtoggle,.hover,.smoothing{display:none}.scroll{max-height:none;overflow:visible}body{max-width:none}"
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
    hp_sb_put(b, "<script>"
                 "document.querySelectorAll('.logtoggle input').forEach(function(c){"
                 "c.addEventListener('change',function(){var f=c.closest('figure');"
                 "f.querySelector('.view-lin').style.display=c.checked?'none':'';"
                 "f.querySelector('.view-log').style.display=c.checked?'':'none';});});"
                 /* a view's frame (report/svg): data range, plot area, log axes; pixels to data and back */
                 "function frame(g){return g.getAttribute('data-f').split(' ').map(Number);}"
                 "function unx(f,p){var x=f[0]+(p-f[4])/(f[5]-f[4])*(f[1]-f[0]);return f[8]?Math.pow(10,x):x;}"
                 "function uny(f,p){var y=f[2]+(f[7]-p)/(f[7]-f[6])*(f[3]-f[2]);return f[9]?Math.pow(10,y):y;}"
                 "function tox(f,x){var v=f[8]?Math.log10(x):x;return f[4]+(f[1]>f[0]?(v-f[0])/(f[1]-f[0]):0.5)*(f[5]-f[4]);}"
                 "function toy(f,y){var v=f[9]?Math.log10(y):y;return f[7]-(f[3]>f[2]?(v-f[2])/(f[3]-f[2]):0.5)*(f[7]-f[6]);}"
                 /* hover: the nearest point of every curve under the pointer, in data units */
                 "document.querySelectorAll('svg.chart').forEach(function(svg){"
                 "var out=svg.closest('figure').querySelector('.hover');if(!out)return;"
                 "svg.addEventListener('mousemove',function(ev){"
                 "var g=[].filter.call(svg.querySelectorAll('g[data-f]'),function(x){return x.style.display!='none';})[0];"
                 "if(!g)return;var f=frame(g),r=svg.getBoundingClientRect(),st=g.hasAttribute('data-stacked');"
                 "var px=(ev.clientX-r.left)*svg.viewBox.baseVal.width/r.width,t=[],bx=null,below=0;"
                 "g.querySelectorAll('path.series').forEach(function(p){"
                 "if(!p.pts)p.pts=p.getAttribute('d').replace('h0.1','').slice(1).split('L').map(function(s){"
                 "return s.split(' ').map(Number);});var b=null;"
                 "p.pts.forEach(function(q){if(!b||Math.abs(q[0]-px)<Math.abs(b[0]-px))b=q;});if(!b)return;"
                 "var y=uny(f,b[1]);if(bx===null)bx=unx(f,b[0]);var v=st?y-below:y;if(st)below=y;"
                 "t.push((p.getAttribute('data-series')||'')+' '+Number(v.toPrecision(st?3:5)));});"
                 "out.textContent=bx===null?'':' at '+Number(bx.toPrecision(6))+': '+t.join(', ');});"
                 "svg.addEventListener('mouseleave',function(){out.textContent='';});});"
                 /* smoothing: TensorBoard's debiased EMA over the raw points, decimated per pixel column
                    (first, lowest, highest, last), as report/series does */
                 "function ema(Y,w){var o=[],last=0,k=0;Y.forEach(function(y){if(!isFinite(y)){o.push(y);return;}"
                 "last=last*w+(1-w)*y;k++;o.push(w>0?last/(1-Math.pow(w,k)):last);});return o;}"
                 "function dec(X,Y,x0,x1,cols){var n=X.length,k=[],i;if(n<=4*cols||!(x1>x0)){for(i=0;i<n;i++)k.push(i);"
                 "return k;}function col(x){return Math.floor((x-x0)/(x1-x0)*cols);}"
                 "for(i=0;i<n;){var c=col(X[i]),a=i,lo=i,hi=i,z=i;for(;i<n&&col(X[i])==c;i++){if(Y[i]<Y[lo])lo=i;"
                 "if(Y[i]>Y[hi])hi=i;z=i;}[a,Math.min(lo,hi),Math.max(lo,hi),z].forEach(function(j){"
                 "if(!k.length||k[k.length-1]<j)k.push(j);});}return k;}"
                 "document.querySelectorAll('label.smoothing').forEach(function(lab){"
                 "var fig=lab.closest('figure'),inp=lab.querySelector('input'),out=lab.querySelector('output');"
                 "lab.hidden=false;var note=fig.querySelector('.smooth-static');if(note)note.hidden=true;"
                 "inp.addEventListener('input',function(){var w=Number(inp.value);out.textContent=w.toFixed(2);"
                 "fig.querySelectorAll('g.smooth-src').forEach(function(src){"
                 "var a=src.getAttribute('data-xy').split(' ').map(Number),X=[],Y=[];"
                 "for(var i=0;i+1<a.length;i+=2){X.push(a[i]);Y.push(a[i+1]);}"
                 "var S=ema(Y,w),name=src.getAttribute('data-series')+' smoothed';"
                 "fig.querySelectorAll('g[data-f]').forEach(function(g){var f=frame(g);"
                 "var p=[].filter.call(g.querySelectorAll('path.smooth'),function(q){"
                 "return q.getAttribute('data-series')==name;})[0];if(!p)return;var xs=[],ys=[];"
                 "for(var i=0;i<X.length;i++)if(isFinite(X[i])&&isFinite(S[i])&&!(f[8]&&!(X[i]>0))&&!(f[9]&&!(S[i]>0))){"
                 "xs.push(X[i]);ys.push(S[i]);}"
                 "var k=dec(xs,ys,f[8]?Math.pow(10,f[0]):f[0],f[8]?Math.pow(10,f[1]):f[1],f[8]?1<<30:Math.floor(f[5]-f[4])),d='';"
                 "k.forEach(function(i,j){d+=(j?'L':'M')+tox(f,xs[i]).toFixed(1)+' '+toy(f,ys[i]).toFixed(1);});"
                 "if(k.length==1)d+='h0.1';p.setAttribute('d',d);p.setAttribute('data-n',k.length);p.pts=null;});});});});"
                 "document.body.setAttribute('data-rendered','1');</script>\n</body></html>\n");
}
