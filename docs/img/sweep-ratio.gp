# Written by tiercache-bench sweep; run: gnuplot THIS_FILE
set datafile separator ','
set terminal pngcairo size 900,540 noenhanced font ',10'
set output 'docs/img/sweep-ratio.png'
set title 'tiercache-bench sweep over tier_ratio: default.json'
set xlabel 'tier ratio (first : second)'
set ylabel 'operations per second (median)'
set y2label 'hit ratio (%)'
set yrange [0:*]
set y2range [0:100]
set ytics nomirror
set y2tics
set grid
set key outside top center horizontal
set offsets 0.3, 0.3, 0, 0
plot 'docs/img/sweep-ratio.csv' skip 1 using 0:3:xtic(1) with linespoints lw 2 pt 7 title 'ops/s' axes x1y1, \
     '' skip 1 using 0:4 with linespoints lw 2 pt 5 title 'get/s' axes x1y1, \
     '' skip 1 using 0:5 with linespoints lw 2 pt 9 title 'set/s' axes x1y1, \
     '' skip 1 using 0:($6*100) with linespoints lw 2 dt 2 pt 13 title 'hit ratio' axes x1y2
