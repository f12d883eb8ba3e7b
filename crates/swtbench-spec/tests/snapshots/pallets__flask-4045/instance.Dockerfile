FROM --platform=linux/x86_64 exec.env.x86_64.384479533ca70e4c73c9a8:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
